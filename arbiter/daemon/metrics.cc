#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>

namespace arbd {

Histogram::Histogram()
    : bounds_{5e-6, 10e-6, 20e-6, 40e-6, 100e-6, 250e-6, 1e-3, 5e-3, 10e-3, 50e-3, 0.25, 1.0},
      buckets_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
    size_t i = 0;
    while (i < bounds_.size() && seconds > bounds_[i]) i++;
    buckets_[i]++;
    sum_ += seconds;
    count_++;
}

void Histogram::render(const std::string& name, const std::string& help, std::string* out) const {
    char line[256];
    *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); i++) {
        cumulative += buckets_[i];
        if (i < bounds_.size())
            snprintf(line, sizeof(line), "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds_[i],
                     static_cast<unsigned long long>(cumulative));
        else
            snprintf(line, sizeof(line), "%s_bucket{le=\"+Inf\"} %llu\n", name.c_str(),
                     static_cast<unsigned long long>(cumulative));
        *out += line;
    }
    snprintf(line, sizeof(line), "%s_sum %.9f\n%s_count %llu\n", name.c_str(), sum_, name.c_str(),
             static_cast<unsigned long long>(count_));
    *out += line;
}

void RecentQuantiles::observe(double seconds) {
    if (ring_.size() < kCapacity) {
        ring_.push_back(seconds);
    } else {
        ring_[next_] = seconds;
    }
    next_ = (next_ + 1) % kCapacity;
}

double RecentQuantiles::quantile(double q) const {
    if (ring_.empty()) return 0;
    std::vector<double> sorted = ring_;
    std::sort(sorted.begin(), sorted.end());
    const size_t rank = size_t(std::ceil(q * double(sorted.size())));
    return sorted[rank == 0 ? 0 : std::min(rank, sorted.size()) - 1];
}

void RecentQuantiles::render(const std::string& name, const std::string& help,
                             std::string* out) const {
    char line[256];
    *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n";
    for (const char* q : {"0.5", "0.99", "1"}) {
        snprintf(line, sizeof(line), "%s{quantile=\"%s\"} %.9f\n", name.c_str(), q,
                 quantile(std::atof(q)));
        *out += line;
    }
    snprintf(line, sizeof(line), "%s_count %zu\n", name.c_str(), ring_.size());
    *out += line;
}

namespace {
void metric(std::string* out, const char* name, const char* type, const char* help,
            uint64_t value) {
    *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
            name + " " + std::to_string(value) + "\n";
}
}  // namespace

std::string renderMetrics(const Counters& c, const Gauges& g) {
    std::string out;
    metric(&out, "arbiter_grants_total", "counter", "Cores granted to carriers.", c.grants);
    metric(&out, "arbiter_releases_total", "counter", "Cores released cooperatively.", c.releases);
    metric(&out, "arbiter_forced_reclaims_total", "counter",
           "Cores taken back after the release timeout.", c.forcedReclaims);
    metric(&out, "arbiter_disconnect_reclaims_total", "counter",
           "Cores taken back from disconnected or dead clients.", c.disconnectReclaims);
    metric(&out, "arbiter_stale_releases_total", "counter",
           "Release acknowledgements for an older grant (ignored).", c.staleReleases);
    metric(&out, "arbiter_protocol_errors_total", "counter",
           "Connections closed for malformed or out-of-order messages.", c.protocolErrors);
    metric(&out, "arbiter_connections_total", "counter", "Accepted connections.", c.connections);
    metric(&out, "arbiter_backend_errors_total", "counter", "Failed backend operations.",
           c.backendErrors);
    metric(&out, "arbiter_clamped_requests_total", "counter",
           "Requests reduced by the configured limits.", c.clampedRequests);
    metric(&out, "arbiter_adopted_carriers_total", "counter",
           "Carriers re-adopted after an arbiter restart.", c.adoptedCarriers);
    metric(&out, "arbiter_odd_core_rotations_total", "counter",
           "Odd cores handed on to another process of the same priority (--share-period).",
           c.oddCoreRotations);
    out +=
        "# HELP arbiter_demand_cores Cores requested, per priority level (0 = highest).\n"
        "# TYPE arbiter_demand_cores gauge\n";
    for (size_t p = 0; p < g.demand.size(); p++)
        out += "arbiter_demand_cores{priority=\"" + std::to_string(p) + "\"} " +
               std::to_string(g.demand[p]) + "\n";
    metric(&out, "arbiter_processes", "gauge", "Registered processes.", g.processes);
    metric(&out, "arbiter_carriers", "gauge", "Registered carrier threads.", g.carriers);
    metric(&out, "arbiter_managed_cores", "gauge", "Cores the arbiter hands out.", g.managedCores);
    metric(&out, "arbiter_granted_cores", "gauge", "Cores currently granted.", g.grantedCores);
    metric(&out, "arbiter_pending_releases", "gauge", "Releases asked for and not yet done.",
           g.pendingReleases);
    c.grantLatency.render("arbiter_grant_latency_seconds",
                          "Time from a core being due to a process to the grant being sent.", &out);
    c.releaseLatency.render("arbiter_release_latency_seconds",
                            "Time from asking a process for a core to its release.", &out);
    c.recentReleaseLatency.render(
        "arbiter_release_latency_recent_seconds",
        "Quantiles of the latest cooperative release latencies (up to 4096).", &out);
    c.threadMoveLatency.render("arbiter_thread_move_seconds",
                               "Time of one backend move of a carrier thread (to a core or to the "
                               "unmanaged set), spent on the arbiter's loop.",
                               &out);
    c.recentThreadMoveLatency.render("arbiter_thread_move_recent_seconds",
                                     "Quantiles of the latest backend thread moves (up to 4096).",
                                     &out);
    return out;
}

}  // namespace arbd
