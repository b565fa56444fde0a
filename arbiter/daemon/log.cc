#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include <atomic>

namespace arbd {
namespace {
// Set at start-up, read by every log call; atomic only so tests may change it between cases.
std::atomic<int> gLevel{static_cast<int>(LogLevel::kInfo)};
const char* kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

bool parseLogLevel(const std::string& text, LogLevel* level) {
    for (int i = 0; i < 4; i++) {
        if (text == kNames[i]) {
            *level = static_cast<LogLevel>(i);
            return true;
        }
    }
    return false;
}

void setLogLevel(LogLevel level) {
    gLevel.store(static_cast<int>(level));
}

bool logEnabled(LogLevel level) {
    return static_cast<int>(level) <= gLevel.load();
}

// One fprintf per line so lines from concurrent test threads never interleave mid-line.
void logf(LogLevel level, const char* format, ...) {
    if (!logEnabled(level)) return;
    char text[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    fprintf(stderr, "core-arbiter: %s: %s\n", kNames[static_cast<int>(level)], text);
}

}  // namespace arbd
