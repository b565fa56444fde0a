#include "format.h"

#include <stdio.h>

namespace arbctl {
namespace {

std::string jsonString(const std::string& s) {
    std::string out = "\"";
    for (unsigned char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out + "\"";
}

// Comma-separated values, `empty` when there are none. (Appending piecewise also sidesteps a
// GCC 12 -Wrestrict false positive on "literal" + std::string.)
template <typename Container>
std::string list(const Container& values, const char* empty) {
    std::string out;
    for (size_t i = 0; i < values.size(); i++) {
        if (i) out += ',';
        out += std::to_string(values[i]);
    }
    return out.empty() ? empty : out;
}

template <typename Container>
std::string jsonArray(const Container& values) {
    std::string out(1, '[');
    out += list(values, "");
    out += ']';
    return out;
}

}  // namespace

int bestPriority(const arbproto::ProcessStatus& p) {
    for (int i = 0; i < arbproto::kPriorityLevels; i++)
        if (p.requested[i]) return i;
    return -1;
}

std::string toJson(const arbproto::StatusReply& s) {
    std::string out = "{\"processes\":[";
    for (size_t i = 0; i < s.processes.size(); i++) {
        const auto& p = s.processes[i];
        out += std::string(i ? "," : "") + "{\"pid\":" + std::to_string(p.pid) +
               ",\"command\":" + jsonString(p.command) +
               ",\"priority\":" + std::to_string(bestPriority(p)) +
               ",\"requested\":" + jsonArray(p.requested) + ",\"granted\":" + jsonArray(p.granted) +
               ",\"pendingReleases\":" + jsonArray(p.pendingReleases) +
               ",\"uid\":" + std::to_string(p.uid) + ",\"minCores\":" + std::to_string(p.minCores) +
               ",\"maxCores\":" + std::to_string(p.maxCores) +
               ",\"carriers\":" + std::to_string(p.carriers) + "}";
    }
    out += "],\"managed\":";
    out += jsonArray(s.managed);
    out += '}';
    return out;
}

std::string toTable(const arbproto::StatusReply& s) {
    std::string out = "managed cores: ";
    out += list(s.managed, "-");
    out += '\n';
    char line[512];
    snprintf(line, sizeof(line), "%-8s %-16s %-5s %-4s %-23s %-9s %-20s %s\n", "PID", "COMMAND",
             "UID", "PRIO", "REQUESTED(p0..p7)", "MIN/MAX", "GRANTED", "PENDING-RELEASE");
    out += line;
    for (const auto& p : s.processes) {
        std::string requested = list(p.requested, "");
        std::string max = p.maxCores == UINT32_MAX ? "-" : std::to_string(p.maxCores);
        snprintf(line, sizeof(line), "%-8d %-16s %-5u %-4d %-23s %-9s %-20s %s\n", p.pid,
                 p.command.c_str(), p.uid, bestPriority(p), requested.c_str(),
                 (std::to_string(p.minCores) + "/" + max).c_str(), list(p.granted, "-").c_str(),
                 list(p.pendingReleases, "-").c_str());
        out += line;
    }
    return out;
}

}  // namespace arbctl
