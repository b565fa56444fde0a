// The kernel's cpulist text format ("0-3,8,10-11"), both ways.
#include <algorithm>
#include <charconv>

#include "arbpolicy/topology.h"

namespace arbpolicy {
namespace {

// Whitespace the kernel (or a hand-written config) may leave around a cpulist.
bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Strips surrounding whitespace; sysfs files end with a newline.
std::string_view trim(std::string_view text) {
    while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
    while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
    return text;
}

// One id: digits only (no sign, no spaces), at most kMaxCpuId, so a bad range cannot make us
// allocate gigabytes.
std::optional<int> parseId(std::string_view text) {
    if (text.empty() ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value > kMaxCpuId) {
        return std::nullopt;
    }
    return value;
}

// One element, "N" or "A-B" with A <= B, appended to *out.
bool parseElement(std::string_view element, std::vector<int>* out) {
    size_t dash = element.find('-');
    std::optional<int> first = parseId(element.substr(0, dash));
    std::optional<int> last =
        dash == std::string_view::npos ? first : parseId(element.substr(dash + 1));
    if (!first || !last || *first > *last) return false;
    for (int id = *first; id <= *last; ++id) out->push_back(id);
    return true;
}

// Appends "a" or "a-b" for one run of consecutive ids.
void appendRun(int first, int last, std::string* out) {
    if (!out->empty()) out->push_back(',');
    *out += std::to_string(first);
    if (last != first) {
        out->push_back('-');
        *out += std::to_string(last);
    }
}

}  // namespace

// Splits on commas and expands each element; any malformed element rejects the whole list, since a
// half-understood cpu set is worse than an error.
std::optional<std::vector<int>> parseCpuList(std::string_view text) {
    text = trim(text);
    std::vector<int> ids;
    if (text.empty()) return ids;
    while (true) {
        size_t comma = text.find(',');
        if (!parseElement(text.substr(0, comma), &ids)) return std::nullopt;
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

// Sorts a copy, then emits maximal runs of consecutive ids.
std::string formatCpuList(const std::vector<int>& cpus) {
    std::vector<int> ids;
    std::copy_if(cpus.begin(), cpus.end(), std::back_inserter(ids), [](int id) { return id >= 0; });
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::string out;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        appendRun(ids[i], ids[j], &out);
        i = j + 1;
    }
    return out;
}

}  // namespace arbpolicy
