// Command line of core-arbiter: parsing (CLI11) and resolution into checked settings.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "arbpolicy/limits.h"
#include "arbpolicy/topology.h"
#include "arbproto/messages.h"
#include "backend.h"
#include "log.h"
#include "sys.h"

namespace arbd {

struct Options {
    std::string socketPath = arbproto::kDefaultSocketPath;
    std::string backend = "auto";
    std::string cgroupRoot;
    std::string cpus;
    int reserve = 1;
    std::string configPath;
    int releaseTimeoutMs = 10;
    int releasePollUs = 200;
    int nice = -10;
    std::string metrics;
    std::string logLevel = "info";
    bool adoptAll = false;
    std::string socketGroup;
    int readoptTimeoutMs = 2000;
    int sharePeriodMs = 100;
    std::string sysfsRoot = "/sys";
    std::string procRoot = "/proc";
};

// Parses argv. Returns -1 to go on, else the exit status after printing (0: --help, 2: bad usage;
// errors are one line on stderr).
int parseOptions(int argc, char** argv, Options* options);

struct Settings {
    BackendConfig backend;
    arbpolicy::Topology managed;
    std::optional<arbpolicy::LimitsConfig> limits;
    std::chrono::milliseconds releaseTimeout{10};
    std::chrono::microseconds releasePoll{200};  // 0 = sleep at once while a release is awaited
    int nice = -10;                              // the arbiter's own (own_priority.h)
    std::chrono::milliseconds readoptTimeout{2000};
    std::chrono::milliseconds sharePeriod{100};  // 0 = odd cores are never time-shared
    std::string socketPath;
    int socketGroup = -1;
    std::string metricsPath, metricsAddr;
    LogLevel logLevel = LogLevel::kInfo;
    bool favorDynmods = false;  // Detected::favorDynmods: thread moves never wait for the kernel
};

// Checks values and fills in machine-dependent defaults. False with a one-line error on bad input.
bool resolveOptions(const Options& options, Sys& sys, Settings* settings, std::string* error);

// Reads and parses the limits file.
std::optional<arbpolicy::LimitsConfig> loadLimits(Sys& sys, const std::string& path,
                                                  std::string* error);

}  // namespace arbd
