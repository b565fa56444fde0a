// Text traces -> samples, and printing what an estimator decided on them.
#include "trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "format.h"

namespace arbrt::policy::testing {
namespace {

// A non-negative decimal number ("2", "1.5"); nullopt otherwise.
std::optional<double> parseNumber(std::string_view text) {
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0) ||
        !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

// A non-negative integer; nullopt otherwise.
std::optional<uint64_t> parseCount(std::string_view text) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
}

// What a trace line says about one core over its interval.
struct CoreLine {
    int id = 0;
    double busy = 0;               // fraction of the interval
    std::optional<double> load;    // runnable threads, averaged
    uint64_t queued = 0;           // waiting at the sample
    std::optional<uint64_t> left;  // stopped waiting during the interval
};

// Running counters of one core across the trace, and its queue length at its last listing.
struct CoreState {
    CoreCounters counters;
    uint64_t queued = 0;
};

// Applies one key=value to `core`; returns an error or "".
std::string applyKey(std::string_view token, CoreLine* core) {
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos) {
        return "expected key=value after c" + std::to_string(core->id) + ", got '" +
               std::string(token) + "'";
    }
    const std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "busy") {
        if (value.empty() || value.back() != '%') return "busy needs a percentage, e.g. busy=40%";
        std::optional<double> percent = parseNumber(value.substr(0, value.size() - 1));
        if (!percent || *percent > 100) return "busy=" + std::string(value) + " is not 0%..100%";
        core->busy = *percent / 100;
    } else if (key == "load") {
        core->load = parseNumber(value);
        if (!core->load) return "load=" + std::string(value) + " is not a number >= 0";
    } else if (key == "q" || key == "left") {
        std::optional<uint64_t> count = parseCount(value);
        if (!count) return std::string(key) + "=" + std::string(value) + " is not a count";
        if (key == "q") core->queued = *count;
        if (key == "left") core->left = *count;
    } else {
        return "unknown key '" + std::string(key) + "' (expected busy=, load=, q=, left=)";
    }
    return "";
}

// Advances a core's cumulative counters by one interval as the line describes; returns an error
// or "".
std::string advance(const CoreLine& line, uint64_t intervalNs, CoreState* state) {
    const double load = line.load.value_or(line.busy);
    if (load + 1e-9 < line.busy) return "load is below busy on c" + std::to_string(line.id);
    const uint64_t left = line.left.value_or(state->queued);
    if (left + line.queued < state->queued) {
        std::string error = "c";  // (built in steps: GCC 12 warns falsely on "lit" + string)
        error += std::to_string(line.id) + ": q fell from " + std::to_string(state->queued) +
                 " to " + std::to_string(line.queued) + ", so at least " +
                 std::to_string(state->queued - line.queued) + " left";
        return error;
    }
    const double interval = static_cast<double>(intervalNs);
    CoreCounters& c = state->counters;
    c.grantedNs += intervalNs;
    c.busyNs += static_cast<uint64_t>(std::llround(line.busy * interval));
    c.runnableNs += static_cast<uint64_t>(std::llround(load * interval));
    c.enqueued += line.queued + left - state->queued;
    c.dequeued += left;
    state->queued = line.queued;
    return "";
}

// One line's cores from its words after the time and repeat count; returns an error or "".
std::string parseCores(const std::vector<std::string>& words, size_t first,
                       std::vector<CoreLine>* cores) {
    for (size_t i = first; i < words.size(); ++i) {
        const std::string& word = words[i];
        if (word[0] == 'c' && word.find('=') == std::string::npos) {
            std::optional<uint64_t> id = parseCount(std::string_view(word).substr(1));
            if (!id || *id >= static_cast<uint64_t>(kMaxCoreIds)) {
                return "'" + word + "' is not a core (c0..c" + std::to_string(kMaxCoreIds - 1) +
                       ")";
            }
            for (const CoreLine& other : *cores) {
                if (other.id == static_cast<int>(*id)) return "core " + word + " listed twice";
            }
            CoreLine core;
            core.id = static_cast<int>(*id);
            cores->push_back(core);
            continue;
        }
        if (cores->empty()) return "'" + word + "' before any core (cID)";
        if (std::string error = applyKey(word, &cores->back()); !error.empty()) return error;
    }
    return "";
}

// The words of a line, comments removed.
std::vector<std::string> wordsOf(std::string line) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

// The time formatting shared with messages, without the space: "50ms".
std::string withoutSpace(std::string text) {
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    return text;
}

// One "TIME:CORES(reason)" entry.
std::string entry(const Timed& t) {
    return compactTime(t.nowNs) + ":" + std::to_string(t.decision.cores) + "(" +
           std::string(toString(t.decision.reason)) + ")" + (t.decision.clamped ? "!" : "");
}

// Joins entries with spaces.
std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : " ") + part;
    return out;
}

}  // namespace

// Units as people write them; fractions allowed ("1.5ms").
std::optional<uint64_t> parseDuration(std::string_view text) {
    static const std::map<std::string_view, double> kUnits = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    if (text == "0") return 0;
    size_t split = text.size();
    while (split > 0 && std::isalpha(static_cast<unsigned char>(text[split - 1]))) --split;
    auto unit = kUnits.find(text.substr(split));
    std::optional<double> number = parseNumber(text.substr(0, split));
    if (unit == kUnits.end() || !number) return std::nullopt;
    return static_cast<uint64_t>(std::llround(*number * unit->second));
}

// Line by line: time, repeat count, cores; counters accumulate per core across lines.
std::optional<Trace> parseTrace(std::string_view text, std::string* error) {
    Trace trace;
    std::vector<CoreState> states(kMaxCoreIds);
    for (int id = 0; id < kMaxCoreIds; ++id) states[static_cast<size_t>(id)].counters.coreId = id;
    uint64_t now = 0;
    std::istringstream lines{std::string(text)};
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        auto fail = [&](const std::string& what) {
            *error = "line " + std::to_string(number) + ": " + what;
            return std::nullopt;
        };
        const std::vector<std::string> words = wordsOf(line);
        if (words.empty()) continue;
        if (words[0][0] != '+')
            return fail("a sample starts with +DURATION, got '" + words[0] + "'");
        std::optional<uint64_t> interval = parseDuration(std::string_view(words[0]).substr(1));
        if (!interval) return fail("'" + words[0] + "' is not a duration (+10us, +50ms, ...)");
        uint64_t count = 1;
        size_t first = 1;
        if (words.size() > 1 && words[1][0] == 'x') {
            std::optional<uint64_t> repeat = parseCount(std::string_view(words[1]).substr(1));
            if (!repeat || *repeat == 0)
                return fail("'" + words[1] + "' is not a repeat count (x3)");
            count = *repeat;
            first = 2;
        }
        std::vector<CoreLine> cores;
        if (std::string problem = parseCores(words, first, &cores); !problem.empty()) {
            return fail(problem);
        }
        for (uint64_t i = 0; i < count; ++i) {
            now += *interval;
            std::vector<CoreCounters> sample;
            for (const CoreLine& core : cores) {
                CoreState& state = states[static_cast<size_t>(core.id)];
                if (std::string problem = advance(core, *interval, &state); !problem.empty()) {
                    return fail(problem);
                }
                sample.push_back(state.counters);
            }
            trace.times.push_back(now);
            trace.cores.push_back(std::move(sample));
        }
    }
    return trace;
}

// Tests write traces inline: a typo should fail the test with the parser's message.
Trace traceOf(std::string_view text) {
    std::string error;
    std::optional<Trace> trace = parseTrace(text, &error);
    if (!trace) {
        ADD_FAILURE() << "bad trace: " << error;
        return Trace{};
    }
    return *trace;
}

std::vector<Timed> replay(CoreEstimator& estimator, const Trace& trace) {
    std::vector<Timed> out;
    for (size_t i = 0; i < trace.size(); ++i) {
        out.push_back(Timed{trace.times[i], estimator.onSample(trace.sample(i))});
    }
    return out;
}

std::string decisionPoints(const std::vector<Timed>& decisions) {
    std::vector<std::string> parts;
    for (const Timed& t : decisions) {
        if (t.decision.reason != Reason::hold) parts.push_back(entry(t));
    }
    return join(parts);
}

std::string changes(const std::vector<Timed>& decisions, uint32_t initialWanted) {
    std::vector<std::string> parts;
    uint32_t wanted = initialWanted;
    for (const Timed& t : decisions) {
        if (t.decision.cores != wanted) parts.push_back(entry(t));
        wanted = t.decision.cores;
    }
    return join(parts);
}

std::string compactTime(uint64_t ns) {
    return ns == 0 ? "0" : withoutSpace(detail::formatDuration(ns));
}

}  // namespace arbrt::policy::testing
