// ARB_ASSERT: invariants of the runtime and the preload library, checked in debug and sanitizer
// builds and free in Release.
//
// Why not <cassert>: assert() formats with fprintf and may allocate, and a broken invariant in the
// scheduler is typically found on a carrier's small stack, inside a signal handler, or with a
// bucket lock held — where stdio and malloc may themselves deadlock. The failure path here is one
// write(2) of a preformatted line and abort(), both async-signal-safe.
//
// Whether checks are on is decided once per build (ARBRUN_CHECK_INVARIANTS, set by CMake for Debug
// and sanitizer builds), never at run time: a Release build carries no branch for them. In Release
// the condition is still compiled (inside `if (false)`), so it cannot rot.
#pragma once

namespace arbrt::detail {

// Writes "arbrun: invariant broken at FILE:LINE: CONDITION (WHY)" to stderr and aborts. Never
// returns; safe in signal handlers and with any runtime lock held.
[[noreturn]] void invariantFailed(const char* file, int line, const char* condition,
                                  const char* why) noexcept;

#if defined(ARBRUN_CHECK_INVARIANTS)
inline constexpr bool kCheckInvariants = true;
#else
inline constexpr bool kCheckInvariants = false;
#endif

}  // namespace arbrt::detail

// ARB_ASSERT(condition, "why it must hold"): the reason is part of the message, so a failure names
// the broken rule, not just the expression.
#define ARB_ASSERT(condition, why)                                                 \
    do {                                                                           \
        if (::arbrt::detail::kCheckInvariants && !(condition)) [[unlikely]]        \
            ::arbrt::detail::invariantFailed(__FILE__, __LINE__, #condition, why); \
    } while (false)

// For a switch case or branch that a correct program never reaches.
#define ARB_UNREACHABLE(why)                                                          \
    do {                                                                              \
        if (::arbrt::detail::kCheckInvariants)                                        \
            ::arbrt::detail::invariantFailed(__FILE__, __LINE__, "unreachable", why); \
    } while (false)
