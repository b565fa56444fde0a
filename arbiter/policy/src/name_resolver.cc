// The system's user database behind NameResolver (getpwnam_r/getgrnam_r, so NSS modules apply).
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "arbpolicy/limits.h"

namespace arbpolicy {
namespace {

// Calls a reentrant getXXnam_r with a buffer that grows while the entry does not fit (ERANGE) and
// returns the id `idOf` reads from the entry (read before the buffer it points into goes away).
template <typename Entry, typename Lookup, typename IdOf>
std::optional<uint32_t> lookupId(Lookup lookup, IdOf idOf) {
    long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buffer(hint > 0 ? static_cast<size_t>(hint) : 16384);
    while (true) {
        Entry entry;
        Entry* found = nullptr;
        int rc = lookup(&entry, buffer.data(), buffer.size(), &found);
        if (rc == ERANGE && buffer.size() < (1u << 20)) {
            buffer.resize(buffer.size() * 2);
            continue;
        }
        if (rc != 0 || found == nullptr) return std::nullopt;
        return idOf(*found);
    }
}

// A user name to its uid, nullopt when unknown (or the lookup failed).
std::optional<uid_t> systemUser(const std::string& name) {
    return lookupId<passwd>([&](passwd* p, char* b, size_t n,
                                passwd** r) { return getpwnam_r(name.c_str(), p, b, n, r); },
                            [](const passwd& p) { return p.pw_uid; });
}

// A group name to its gid, nullopt when unknown (or the lookup failed).
std::optional<gid_t> systemGroup(const std::string& name) {
    return lookupId<group>([&](group* g, char* b, size_t n,
                               group** r) { return getgrnam_r(name.c_str(), g, b, n, r); },
                           [](const group& g) { return g.gr_gid; });
}

}  // namespace

// Stateless functions: safe to call from any thread.
NameResolver NameResolver::system() {
    return NameResolver{systemUser, systemGroup};
}

}  // namespace arbpolicy
