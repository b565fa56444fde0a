// Text helpers shared by the parsers: quoting user input for one-line messages, the common error
// sentence, and strict decimal parsing.
#include <charconv>

#include "parse_detail.h"

namespace arbconfig::detail {

// Escapes whatever could break the message's single line or its quoting.
std::string quoted(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\'' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += ch;
        }
    }
    out += '\'';
    return out;
}

// One sentence shape for every parser, so users learn to read them once.
bool invalid(std::string_view label, std::string_view text, std::string_view reason,
             std::string_view form, std::string* error) {
    if (!error) return false;
    std::string message(label);
    message += ": ";
    message += quoted(text);
    message += " is not valid";
    if (!reason.empty()) {
        message += ": ";
        message += reason;
    }
    message += "; expected ";
    message += form;
    *error = std::move(message);
    return false;
}

// std::from_chars alone would accept a prefix ("3x") and a leading '-' is its error; requiring
// that it consumed everything and that the first byte is a digit makes the syntax exactly [0-9]+.
bool parseFixedPoint(std::string_view text, double* out) {
    const size_t dot = text.find('.');
    uint64_t whole = 0, fraction = 0;
    if (!parseDecimal(text.substr(0, dot), 1'000'000, &whole)) return false;
    double value = double(whole);
    if (dot != std::string_view::npos) {
        const std::string_view digits = text.substr(dot + 1);
        if (digits.empty() || digits.size() > 9 || !parseDecimal(digits, 999'999'999, &fraction))
            return false;
        double scale = 1;
        for (size_t i = 0; i < digits.size(); ++i) scale *= 10;
        value += double(fraction) / scale;
    }
    *out = value;
    return true;
}

bool parseDecimal(std::string_view text, uint64_t max, uint64_t* out) {
    if (text.empty() || text[0] < '0' || text[0] > '9') return false;
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value > max) return false;
    *out = value;
    return true;
}

}  // namespace arbconfig::detail
