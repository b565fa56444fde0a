// Parser of the limits file (format in arbpolicy/limits.h and README.md).
#include <charconv>
#include <cstdint>
#include <initializer_list>

#include "arbpolicy/limits.h"

namespace arbpolicy {
namespace {

// The accepted form, appended to every syntax error so the reader can fix the line without the
// docs.
constexpr std::string_view kForm =
    "accepted: 'default|user NAME|UID|group NAME|GID [priority=0..7] [max-cores=N|unlimited]'";

// Ids that uid_t/gid_t can hold; (uid_t)-1 means "no id" to the kernel, so it is excluded.
constexpr uint64_t kMaxId = UINT32_MAX - 1;
constexpr uint64_t kMaxCoresValue = UINT32_MAX - 1;  // UINT32_MAX itself is spelled "unlimited"

// Joins pieces into one message. (Also avoids GCC 12's false -Wrestrict on chains of string +.)
std::string concat(std::initializer_list<std::string_view> pieces) {
    std::string out;
    for (std::string_view piece : pieces) out.append(piece);
    return out;
}

// Where the parser is: line number, and where each entry was first given (duplicate detection).
struct ParseState {
    size_t line = 0;
    size_t defaultLine = 0;
    std::map<uid_t, size_t> userLines;
    std::map<gid_t, size_t> groupLines;
    std::string* error;

    // Sets "line N: what (hint)" and returns false so callers can `return fail(...)`.
    bool fail(const std::string& what, std::string_view hint = kForm) const {
        if (error) *error = concat({"line ", std::to_string(line), ": ", what, " (", hint, ")"});
        return false;
    }
};

// Splits one line into whitespace-separated words, dropping a '#' comment.
std::vector<std::string_view> tokenize(std::string_view line) {
    line = line.substr(0, line.find('#'));
    std::vector<std::string_view> words;
    constexpr std::string_view kSpace = " \t\r\v\f";
    size_t pos = line.find_first_not_of(kSpace);
    while (pos != std::string_view::npos) {
        size_t end = line.find_first_of(kSpace, pos);
        words.push_back(line.substr(pos, end == std::string_view::npos ? end : end - pos));
        pos = end == std::string_view::npos ? end : line.find_first_not_of(kSpace, end);
    }
    return words;
}

// A plain decimal number (digits only, no sign), or nullopt; values above UINT64_MAX also nullopt.
std::optional<uint64_t> parseNumber(std::string_view text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::nullopt;
    }
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Whether a name is a numeric id (users and groups with all-digit names cannot be named).
bool isDigits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// priority=P: 0..7.
bool parsePriority(std::string_view value, const ParseState& state, Limit* limit) {
    std::optional<uint64_t> n = parseNumber(value);
    if (!n || *n >= static_cast<uint64_t>(kPriorityLevels)) {
        return state.fail(
            concat({"priority must be an integer 0..7 (0 = highest), got '", value, "'"}));
    }
    limit->bestPriority = static_cast<int>(*n);
    return true;
}

// max-cores=N|unlimited.
bool parseMaxCores(std::string_view value, const ParseState& state, Limit* limit) {
    if (value == "unlimited") {
        limit->maxCores = UINT32_MAX;
        return true;
    }
    std::optional<uint64_t> n = parseNumber(value);
    if (!n || *n > kMaxCoresValue) {
        return state.fail(
            concat({"max-cores must be a non-negative integer below 4294967295 or "
                    "'unlimited', got '",
                    value, "'"}));
    }
    limit->maxCores = static_cast<uint32_t>(*n);
    return true;
}

// The KEY=VALUE settings after the entry kind (and name); each key at most once.
bool parseSettings(const std::vector<std::string_view>& words, size_t first,
                   const ParseState& state, Limit* limit) {
    bool seenPriority = false;
    bool seenMaxCores = false;
    for (size_t i = first; i < words.size(); ++i) {
        std::string_view word = words[i];
        size_t eq = word.find('=');
        if (eq == std::string_view::npos) {
            return state.fail(concat({"expected KEY=VALUE, got '", word, "'"}));
        }
        std::string_view key = word.substr(0, eq);
        std::string_view value = word.substr(eq + 1);
        bool* seen = key == "priority"    ? &seenPriority
                     : key == "max-cores" ? &seenMaxCores
                                          : nullptr;
        if (seen == nullptr) return state.fail(concat({"unknown setting '", key, "'"}));
        if (*seen) return state.fail(concat({key, " given twice"}));
        *seen = true;
        bool ok = key == "priority" ? parsePriority(value, state, limit)
                                    : parseMaxCores(value, state, limit);
        if (!ok) return false;
    }
    return true;
}

// A user or group name or number to its id. `what` is "user"/"group", `idWord` "uid"/"gid".
std::optional<uint32_t> resolveName(
    std::string_view name, const std::function<std::optional<uint32_t>(const std::string&)>& lookup,
    const char* what, const char* idWord, const ParseState& state) {
    if (isDigits(name)) {
        std::optional<uint64_t> id = parseNumber(name);
        if (!id || *id > kMaxId) {
            state.fail(concat({idWord, " ", name, " out of range"}),
                       concat({idWord, "s are 0..4294967294"}));
            return std::nullopt;
        }
        return static_cast<uint32_t>(*id);
    }
    std::optional<uint32_t> id = lookup ? lookup(std::string(name)) : std::nullopt;
    if (!id) {
        state.fail(concat({"unknown ", what, " '", name, "'"}),
                   concat({"give an existing ", what, " name or a numeric ", idWord}));
    }
    return id;
}

// `default [settings]`.
bool parseDefault(const std::vector<std::string_view>& words, ParseState* state,
                  LimitsConfig* config) {
    if (words.size() > 1 && words[1].find('=') == std::string_view::npos) {
        return state->fail(concat({"'default' takes no name, got '", words[1], "'"}));
    }
    if (state->defaultLine != 0) {
        return state->fail(
            concat({"default already given on line ", std::to_string(state->defaultLine)}));
    }
    Limit limit;
    if (!parseSettings(words, 1, *state, &limit)) return false;
    state->defaultLine = state->line;
    config->defaultLimit = limit;
    return true;
}

// `user NAME|UID [settings]` or `group NAME|GID [settings]`.
bool parseNamed(const std::vector<std::string_view>& words, bool isUser,
                const NameResolver& resolver, ParseState* state, LimitsConfig* config) {
    const char* what = isUser ? "user" : "group";
    const char* idWord = isUser ? "uid" : "gid";
    if (words.size() < 2 || words[1].find('=') != std::string_view::npos) {
        return state->fail(
            concat({"'", what, "' needs a ", what, " name or ", idWord}),
            concat({"e.g. '", what, " ", isUser ? "alice" : "batch", " priority=2 max-cores=4'"}));
    }
    std::optional<uint32_t> id =
        resolveName(words[1], isUser ? resolver.user : resolver.group, what, idWord, *state);
    if (!id) return false;
    std::map<uint32_t, size_t>& lines = isUser ? state->userLines : state->groupLines;
    if (auto it = lines.find(*id); it != lines.end()) {
        return state->fail(concat({what, " ", words[1], " (", idWord, " ", std::to_string(*id),
                                   ") already given on line ", std::to_string(it->second)}));
    }
    Limit limit;
    if (!parseSettings(words, 2, *state, &limit)) return false;
    lines[*id] = state->line;
    (isUser ? config->users : config->groups)[*id] = limit;
    return true;
}

// One non-blank line: dispatch on the entry kind.
bool parseLine(const std::vector<std::string_view>& words, const NameResolver& resolver,
               ParseState* state, LimitsConfig* config) {
    if (words[0] == "default") return parseDefault(words, state, config);
    if (words[0] == "user") return parseNamed(words, true, resolver, state, config);
    if (words[0] == "group") return parseNamed(words, false, resolver, state, config);
    return state->fail(concat({"unknown entry '", words[0], "'"}));
}

}  // namespace

// The daemon's entry point: names resolved through the system's user database.
std::optional<LimitsConfig> LimitsConfig::parse(std::string_view text, std::string* error) {
    return parse(text, NameResolver::system(), error);
}

// Line by line; the first error stops parsing (a half-applied limits file would silently loosen
// limits).
std::optional<LimitsConfig> LimitsConfig::parse(std::string_view text, const NameResolver& resolver,
                                                std::string* error) {
    static_assert(sizeof(uid_t) == sizeof(uint32_t) && sizeof(gid_t) == sizeof(uint32_t));
    LimitsConfig config;
    ParseState state;
    state.error = error;
    while (!text.empty() || state.line == 0) {
        ++state.line;
        size_t newline = text.find('\n');
        std::vector<std::string_view> words = tokenize(text.substr(0, newline));
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        if (!words.empty() && !parseLine(words, resolver, &state, &config)) return std::nullopt;
    }
    return config;
}

}  // namespace arbpolicy
