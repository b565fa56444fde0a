// The shared interface: reason names, decision traces, core limits.
#include <gtest/gtest.h>

#include "arbrt/policy/estimator.h"
#include "arbrt/thread.h"

namespace arbrt::policy {
namespace {

static_assert(kMaxCoreIds == arbrt::kMaxCores, "core ids must cover the runtime's cores");

TEST(CoreLimits, Validate_AcceptsTheLauncherRange) {
    EXPECT_FALSE(validate(CoreLimits{1, 1}));
    EXPECT_FALSE(validate(CoreLimits{2, 8}));
    EXPECT_FALSE(validate(CoreLimits{256, 256}));
}

TEST(CoreLimits, Validate_RejectsZeroInvertedAndTooMany) {
    const std::string form = " are not valid: need MIN:MAX with 1 <= MIN <= MAX <= 256";
    EXPECT_EQ(validate(CoreLimits{0, 4}), "cores 0:4" + form);
    EXPECT_EQ(validate(CoreLimits{5, 3}), "cores 5:3" + form);
    EXPECT_EQ(validate(CoreLimits{1, 257}), "cores 1:257" + form);
}

TEST(Reason, ToString_EveryReasonHasItsName) {
    EXPECT_EQ(toString(Reason::hold), "hold");
    EXPECT_EQ(toString(Reason::steady), "steady");
    EXPECT_EQ(toString(Reason::loadFactorHigh), "loadFactorHigh");
    EXPECT_EQ(toString(Reason::utilisationLow), "utilisationLow");
    EXPECT_EQ(toString(Reason::queuedAcrossChecks), "queuedAcrossChecks");
    EXPECT_EQ(toString(Reason::coreIdle), "coreIdle");
}

TEST(Decision, Describe_EachReasonReadsAsOneTraceLine) {
    EXPECT_EQ(describe(Decision{3, 3, Reason::hold}), "3 cores (hold)");
    EXPECT_EQ(describe(Decision{3, 3, Reason::steady}), "3 cores: steady");
    EXPECT_EQ(describe(Decision{3, 2, Reason::loadFactorHigh, false, -1, 1.734, 1.5}),
              "2 -> 3 cores: load factor 1.73 > 1.50");
    EXPECT_EQ(describe(Decision{2, 3, Reason::utilisationLow, false, -1, 0.62, 0.76}),
              "3 -> 2 cores: utilisation with one core fewer 0.62 < 0.76");
    EXPECT_EQ(describe(Decision{3, 2, Reason::queuedAcrossChecks, false, 1, 12'000, 10'000}),
              "2 -> 3 cores: a thread on core 1 waited across two checks (>= 12 us)");
    EXPECT_EQ(describe(Decision{2, 3, Reason::coreIdle, false, 2, 260'000, 250'000}),
              "3 -> 2 cores: core 2 idle for 260 us (grace 250 us)");
}

TEST(Decision, Describe_ClampedSaysSo) {
    EXPECT_EQ(describe(Decision{4, 4, Reason::loadFactorHigh, true, -1, 2.0, 1.5}),
              "4 cores: load factor 2.00 > 1.50 (clamped to the core limit)");
}

}  // namespace
}  // namespace arbrt::policy
