// ARB_ASSERT (arbrt/embed/invariant.h): fails loudly with the rule's reason where checks are on,
// and costs nothing (does not even evaluate its condition) where they are off.
#include "arbrt/embed/invariant.h"

#include <gtest/gtest.h>

namespace {

int gEvaluations = 0;

// A condition with a visible side effect, to tell whether ARB_ASSERT evaluated it.
bool countedFalse() {
    ++gEvaluations;
    return false;
}

TEST(ArbAssert_DeathTest, BrokenRuleAbortsNamingFileConditionAndReason) {
    if (!arbrt::detail::kCheckInvariants)
        GTEST_SKIP() << "invariant checks are off in this build (Release without "
                        "ARBRUN_CHECK_INVARIANTS)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(ARB_ASSERT(1 + 1 == 3, "arithmetic holds"),
                 "arbrun: invariant broken at .*invariant_logic_test.cc:[0-9]+: 1 \\+ 1 == 3 "
                 "\\(arithmetic holds\\)");
}

TEST(ArbAssert_DeathTest, UnreachableAbortsWithItsReason) {
    if (!arbrt::detail::kCheckInvariants) GTEST_SKIP() << "invariant checks are off in this build";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(ARB_UNREACHABLE("no such state"), "unreachable \\(no such state\\)");
}

TEST(ArbAssert, HoldingRuleEvaluatesOnceWhenOnAndNeverWhenOff) {
    gEvaluations = 0;
    ARB_ASSERT(!countedFalse(), "countedFalse() is false");
    EXPECT_EQ(gEvaluations, arbrt::detail::kCheckInvariants ? 1 : 0);
}

TEST(ArbAssert, UnreachableIsANoOpWhenOff) {
    if (arbrt::detail::kCheckInvariants) GTEST_SKIP() << "checks are on: covered by the death test";
    ARB_UNREACHABLE("off builds carry no check");
    SUCCEED();
}

}  // namespace
