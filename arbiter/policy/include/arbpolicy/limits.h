// The limits file: caps on priority and cores per user and group, applied to every client request
// so a client can never raise its own limits. Format (also in arbiter/policy/README.md):
//
//   # '#' starts a comment (anywhere on a line); blank lines are ignored.
//   default            priority=4 max-cores=2    # everyone without a user or group entry
//   user  alice        priority=0 max-cores=8    # a user name or a numeric uid
//   user  1001         max-cores=unlimited
//   group batch        priority=6 max-cores=16   # a group name or a numeric gid
//
// One entry per line: `default`, `user NAME|UID` or `group NAME|GID`, then any of
//   priority=P     P in 0..7: the best (numerically lowest) priority level the client may use
//   max-cores=N    N a non-negative integer or `unlimited`: most cores the client may hold
// in any order, each at most once; a missing setting is unrestricted. At most one `default` and one
// entry per user and per group. Names are resolved when the file is parsed (a NameResolver; tests
// inject their own); an unknown name is an error.
//
// Which entry applies (limitFor): the user's entry if there is one; else, if any of the peer's
// groups has an entry, the most permissive of those, setting by setting (lowest priority number,
// largest max-cores); else `default`; else unrestricted. Root (uid 0) is unrestricted unless a user
// or group entry names it: `default` never applies to root.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arbpolicy/allocation.h"

namespace arbpolicy {

// What one client may ask for. A client may not use a priority numerically below bestPriority. A
// plain value.
struct Limit {
    int bestPriority = 0;
    uint32_t maxCores = UINT32_MAX;
};

// Turns user and group names into ids; each function returns nullopt for an unknown name. Tests
// inject fakes; system() asks the system's user database (getpwnam_r/getgrnam_r, so NSS applies).
// Only called by parse(), on the parsing thread; an empty function means every name is unknown.
struct NameResolver {
    std::function<std::optional<uid_t>(const std::string&)> user;
    std::function<std::optional<gid_t>(const std::string&)> group;

    static NameResolver system();
};

// A parsed limits file. Plain value: built by parse(), then only read (safe to share read-only).
struct LimitsConfig {
    // Parses the config text with NameResolver::system(); on error returns nullopt and sets *error
    // (when not null) to "line N: what is wrong (the accepted form)".
    static std::optional<LimitsConfig> parse(std::string_view text, std::string* error);
    // The same with names resolved by `resolver`.
    static std::optional<LimitsConfig> parse(std::string_view text, const NameResolver& resolver,
                                             std::string* error);

    // Effective limit for a peer: user entry if present, else the most permissive of its groups'
    // entries, else `default` (never for root), else unrestricted.
    Limit limitFor(uid_t uid, const std::vector<gid_t>& gids) const;

    // Clamps a request to the limit: cores asked at levels better than limit.bestPriority are asked
    // at bestPriority instead; maxCores is lowered to limit.maxCores and minCores to the resulting
    // maxCores. Returns true (and, when why is not null, sets *why to a one-line description of
    // what changed, for the log: "3 cores asked above priority 4 moved to priority 4; max-cores 10
    // lowered to 3") when anything changed; otherwise leaves *why alone.
    bool clamp(const Limit& limit, ProcessRequest* request, std::string* why) const;

    std::optional<Limit> defaultLimit;  // the `default` entry, if any
    std::map<uid_t, Limit> users;       // `user` entries by uid
    std::map<gid_t, Limit> groups;      // `group` entries by gid
};

}  // namespace arbpolicy
