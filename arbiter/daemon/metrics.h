// Counters and the grant-latency histogram, rendered in the Prometheus text format. Owned and
// updated by the arbiter's single event-loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace arbd {

class Histogram {
  public:
    Histogram();
    void observe(double seconds);
    void render(const std::string& name, const std::string& help, std::string* out) const;
    uint64_t count() const { return count_; }

  private:
    std::vector<double> bounds_;
    std::vector<uint64_t> buckets_;  // non-cumulative; cumulated when rendered
    double sum_ = 0;
    uint64_t count_ = 0;
};

// The most recent observations (a ring of kCapacity), for exact quantiles of what happened lately
// (a benchmark's release latency), next to the cumulative histogram.
class RecentQuantiles {
  public:
    static constexpr size_t kCapacity = 4096;
    void observe(double seconds);
    // Renders `name{quantile="0.5"|"0.99"|"1"}` gauges and `name_count` (observations kept).
    void render(const std::string& name, const std::string& help, std::string* out) const;
    // The q-quantile (0..1, nearest rank) of the kept observations; 0 when there are none.
    double quantile(double q) const;

  private:
    std::vector<double> ring_;
    size_t next_ = 0;
};

struct Counters {
    uint64_t grants = 0;
    uint64_t releases = 0;  // cooperative, acknowledged by the client
    uint64_t forcedReclaims = 0;
    uint64_t disconnectReclaims = 0;
    uint64_t staleReleases = 0;
    uint64_t protocolErrors = 0;
    uint64_t connections = 0;
    uint64_t backendErrors = 0;
    uint64_t clampedRequests = 0;
    uint64_t adoptedCarriers = 0;
    uint64_t oddCoreRotations = 0;  // odd cores handed to another equal claimant at a share period
    Histogram grantLatency;
    Histogram releaseLatency;  // cooperative releases: asked (revoke) to RELEASE_DONE
    RecentQuantiles recentReleaseLatency;
    // One backend move of a carrier thread (onto a core's set, or back to the unmanaged one), as
    // long as the arbiter's loop waited for it: each grant pays one before its GRANTED goes out,
    // and the grants of a many-core hand-over pay theirs one after another.
    Histogram threadMoveLatency;
    RecentQuantiles recentThreadMoveLatency;
};

struct Gauges {
    std::array<uint64_t, 8> demand{};  // cores requested per priority level, all processes
    uint64_t processes = 0;
    uint64_t carriers = 0;
    uint64_t managedCores = 0;
    uint64_t grantedCores = 0;
    uint64_t pendingReleases = 0;
};

std::string renderMetrics(const Counters& counters, const Gauges& gauges);

}  // namespace arbd
