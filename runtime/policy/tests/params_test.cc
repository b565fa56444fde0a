// Parameter validation of both estimators: every bound, with the message the launcher will show.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "arbrt/policy/arachne_estimator.h"
#include "arbrt/policy/fast_estimator.h"

namespace arbrt::policy {
namespace {

// Default params with one field changed (so each case names only what it tests).
template <typename Change>
ArachneParams arachne(Change change) {
    ArachneParams p;
    change(p);
    return p;
}

template <typename Change>
FastParams fast(Change change) {
    FastParams p;
    change(p);
    return p;
}

TEST(ArachneParams, Validate_DefaultsAreArachnesAndValid) {
    ArachneParams p;
    EXPECT_EQ(p.windowNs, 50'000'000u);
    EXPECT_EQ(p.loadFactorThreshold, 1.5);
    EXPECT_EQ(p.hysteresis, 0.09);
    EXPECT_FALSE(validate(p));
}

TEST(ArachneParams, Validate_WindowBoundsInclusive) {
    EXPECT_FALSE(validate(arachne([](auto& p) { p.windowNs = 1'000'000; })));
    EXPECT_FALSE(validate(arachne([](auto& p) { p.windowNs = 60'000'000'000; })));
    EXPECT_EQ(validate(arachne([](auto& p) { p.windowNs = 999'999; })),
              "arachne estimator: window 999.999 us must be in [1 ms, 60 s] (default 50 ms)");
    EXPECT_EQ(validate(arachne([](auto& p) { p.windowNs = 61'000'000'000; })),
              "arachne estimator: window 61 s must be in [1 ms, 60 s] (default 50 ms)");
}

TEST(ArachneParams, Validate_ThresholdMustExceedOneAndBeFinite) {
    const std::string tail = " must be a finite number > 1.0 (default 1.5)";
    EXPECT_FALSE(validate(arachne([](auto& p) { p.loadFactorThreshold = 1.01; })));
    EXPECT_EQ(validate(arachne([](auto& p) { p.loadFactorThreshold = 1.0; })),
              "arachne estimator: load-factor threshold 1" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.loadFactorThreshold = 0.5; })),
              "arachne estimator: load-factor threshold 0.5" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.loadFactorThreshold = NAN; })),
              "arachne estimator: load-factor threshold nan" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.loadFactorThreshold = INFINITY; })),
              "arachne estimator: load-factor threshold inf" + tail);
}

TEST(ArachneParams, Validate_HysteresisOpenIntervalToHalf) {
    const std::string tail =
        " must be in (0, 0.5), a fraction of a core's utilisation (default 0.09)";
    EXPECT_FALSE(validate(arachne([](auto& p) { p.hysteresis = 0.01; })));
    EXPECT_FALSE(validate(arachne([](auto& p) { p.hysteresis = 0.49; })));
    EXPECT_EQ(validate(arachne([](auto& p) { p.hysteresis = 0; })),
              "arachne estimator: hysteresis 0" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.hysteresis = 0.5; })),
              "arachne estimator: hysteresis 0.5" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.hysteresis = -0.1; })),
              "arachne estimator: hysteresis -0.1" + tail);
    EXPECT_EQ(validate(arachne([](auto& p) { p.hysteresis = NAN; })),
              "arachne estimator: hysteresis nan" + tail);
}

TEST(ArachneParams, Validate_LimitsNamedWithTheEstimator) {
    EXPECT_EQ(validate(arachne([](auto& p) {
                  p.limits = {3, 2};
              })),
              "arachne estimator: cores 3:2 are not valid: need MIN:MAX with 1 <= MIN <= MAX "
              "<= 256");
}

TEST(FastParams, Validate_DefaultsAreValid) {
    FastParams p;
    EXPECT_EQ(p.periodNs, 10'000u);
    EXPECT_EQ(p.idleGraceNs, 250'000u);
    EXPECT_FALSE(validate(p));
}

TEST(FastParams, Validate_PeriodFiveMicrosecondsToFiftyMilliseconds) {
    const std::string tail = " must be in [5 us, 50 ms] (default 10 us)";
    EXPECT_FALSE(validate(fast([](auto& p) { p.periodNs = 5'000; })));
    EXPECT_FALSE(validate(fast([](auto& p) {
        p.periodNs = 50'000'000;
        p.idleGraceNs = 100'000'000;
    })));
    EXPECT_EQ(validate(fast([](auto& p) { p.periodNs = 4'999; })),
              "fast estimator: check period 4.999 us" + tail);
    EXPECT_EQ(validate(fast([](auto& p) {
                  p.periodNs = 60'000'000;
                  p.idleGraceNs = 120'000'000;
              })),
              "fast estimator: check period 60 ms" + tail);
}

TEST(FastParams, Validate_GraceAtLeastTwoPeriodsAtMostAMinute) {
    EXPECT_FALSE(validate(fast([](auto& p) { p.idleGraceNs = 20'000; })));
    EXPECT_EQ(validate(fast([](auto& p) { p.idleGraceNs = 19'999; })),
              "fast estimator: idle grace 19.999 us must be at least two check periods (20 us) "
              "and at most 60 s (default 250 us)");
    EXPECT_EQ(validate(fast([](auto& p) { p.idleGraceNs = 61'000'000'000; })),
              "fast estimator: idle grace 61 s must be at least two check periods (20 us) and at "
              "most 60 s (default 250 us)");
}

TEST(FastParams, Validate_LimitsNamedWithTheEstimator) {
    EXPECT_EQ(validate(fast([](auto& p) {
                  p.limits = {0, 2};
              })),
              "fast estimator: cores 0:2 are not valid: need MIN:MAX with 1 <= MIN <= MAX <= 256");
}

TEST(Estimators, Constructor_InvalidParamsThrowWithTheMessage) {
    try {
        ArachneEstimator estimator(arachne([](auto& p) { p.hysteresis = 0.7; }));
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), *validate(arachne([](auto& p) { p.hysteresis = 0.7; })));
    }
    EXPECT_THROW(FastEstimator(fast([](auto& p) { p.periodNs = 1; })), std::invalid_argument);
}

TEST(Estimators, Constructor_ValidParamsStartAtMinCores) {
    ArachneEstimator arachneEstimator(arachne([](auto& p) { p.limits = {2, 6}; }));
    FastEstimator fastEstimator(fast([](auto& p) { p.limits = {3, 6}; }));
    EXPECT_EQ(arachneEstimator.wantedCores(), 2u);
    EXPECT_EQ(fastEstimator.wantedCores(), 3u);
    EXPECT_EQ(arachneEstimator.nextDecisionNs(), 0u);
    EXPECT_EQ(fastEstimator.nextDecisionNs(), 0u);
    EXPECT_EQ(arachneEstimator.name(), "arachne");
    EXPECT_EQ(fastEstimator.name(), "fast");
}

}  // namespace
}  // namespace arbrt::policy
