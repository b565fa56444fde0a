// The retake's pure parts (src/retake.h): reading /proc/PID/task/TID/syscall, and which calls may
// be re-issued after a signal interrupted them.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "gtest/gtest.h"
#include "monitor/retake.h"

namespace {

using arbrt::detail::parseSyscallFile;
using arbrt::detail::retakeable;

TEST(ParseSyscallFile, BlockedInACall_GivesNumberArgumentsAndResumeAddress) {
    long number = 0, args[6] = {};
    uintptr_t pc = 0;
    ASSERT_TRUE(
        parseSyscallFile("202 0x7f1c2a3b4010 0x80 0x0 0x0 0x0 0x0 0x7ffd5c9e1a48 0x7f1c2a39d2a9\n",
                         &number, args, &pc));
    EXPECT_EQ(number, SYS_futex);
    EXPECT_EQ(args[0], 0x7f1c2a3b4010);
    EXPECT_EQ(args[1], 0x80);
    EXPECT_EQ(args[5], 0);
    EXPECT_EQ(pc, uintptr_t(0x7f1c2a39d2a9));
}

TEST(ParseSyscallFile, RunningOrBlockedOutsideACall_IsNotACall) {
    long number = 0, args[6] = {};
    uintptr_t pc = 0;
    EXPECT_FALSE(parseSyscallFile("running\n", &number, args, &pc));
    EXPECT_FALSE(parseSyscallFile("-1 0x7ffd5c9e1a48 0x7f1c2a39d2a9\n", &number, args, &pc));
}

TEST(ParseSyscallFile, Malformed_IsRejected) {
    long number = 0, args[6] = {};
    uintptr_t pc = 0;
    EXPECT_FALSE(parseSyscallFile("", &number, args, &pc));
    EXPECT_FALSE(parseSyscallFile("0 0x3 0x7f00 0x10", &number, args, &pc));  // cut short
    EXPECT_FALSE(parseSyscallFile("0 0x3 0x7f00 0x10 0x0 0x0 0x0 0x7ffd zz", &number, args, &pc));
    EXPECT_FALSE(parseSyscallFile("0 0x3 0x7f00 0x10 0x0 0x0 0x0 0x7ffd 0x0", &number, args, &pc));
}

TEST(Retakeable, ReadinessWaitsWithoutTimeoutOnly) {
    const long pollForever[6] = {0x1000, 2, -1, 0, 0, 0};
    const long pollTimed[6] = {0x1000, 2, 500, 0, 0, 0};
    const long pollNow[6] = {0x1000, 2, 0, 0, 0, 0};
    EXPECT_TRUE(retakeable(SYS_poll, pollForever));
    EXPECT_FALSE(retakeable(SYS_poll, pollTimed));
    EXPECT_FALSE(retakeable(SYS_poll, pollNow));
    const long epollForever[6] = {5, 0x1000, 64, -1, 0, 0};
    const long epollTimed[6] = {5, 0x1000, 64, 10, 0, 0};
    EXPECT_TRUE(retakeable(SYS_epoll_wait, epollForever));
    EXPECT_TRUE(retakeable(SYS_epoll_pwait, epollForever));
    EXPECT_FALSE(retakeable(SYS_epoll_wait, epollTimed));
    const long ppollForever[6] = {0x1000, 2, 0, 0, 0, 0};
    const long ppollTimed[6] = {0x1000, 2, 0x7ffd0000, 0, 0, 0};
    EXPECT_TRUE(retakeable(SYS_ppoll, ppollForever));
    EXPECT_FALSE(retakeable(SYS_ppoll, ppollTimed));
    const long selectForever[6] = {4, 0x1000, 0, 0, 0, 0};
    const long selectTimed[6] = {4, 0x1000, 0, 0, 0x7ffd0000, 0};
    EXPECT_TRUE(retakeable(SYS_select, selectForever));
    EXPECT_TRUE(retakeable(SYS_pselect6, selectForever));
    EXPECT_FALSE(retakeable(SYS_select, selectTimed));
    EXPECT_FALSE(retakeable(SYS_pselect6, selectTimed));
}

TEST(Retakeable, FutexWaitsWithoutTimeoutOnly) {
    long wait[6] = {0x1000, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0};
    EXPECT_TRUE(retakeable(SYS_futex, wait));
    long bitset[6] = {0x1000, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, 0, 0, -1};
    EXPECT_TRUE(retakeable(SYS_futex, bitset));
    long timed[6] = {0x1000, FUTEX_WAIT_PRIVATE, 0, 0x7ffd0000, 0, 0};
    EXPECT_FALSE(retakeable(SYS_futex, timed));  // a second start would stretch the timeout
    long lockPi[6] = {0x1000, FUTEX_LOCK_PI, 0, 0, 0, 0};
    EXPECT_FALSE(retakeable(SYS_futex, lockPi));
}

TEST(Retakeable, TransfersAndWaitsYesTimeoutsAndConnectNo) {
    const long none[6] = {};
    for (long call : {SYS_read, SYS_write, SYS_readv, SYS_recvfrom, SYS_sendmsg, SYS_accept4,
                      SYS_wait4, SYS_waitid, SYS_flock}) {
        EXPECT_TRUE(retakeable(call, none)) << call;
    }
    for (long call : {SYS_nanosleep, SYS_clock_nanosleep, SYS_connect, SYS_pause, SYS_getpid}) {
        EXPECT_FALSE(retakeable(call, none)) << call;
    }
    const long timedBatch[6] = {3, 0x1000, 4, 0, 0x7ffd0000, 0};
    EXPECT_FALSE(retakeable(SYS_recvmmsg, timedBatch));
    EXPECT_TRUE(retakeable(SYS_recvmmsg, none));
}

}  // namespace
