// Minimal leveled logging to stderr (journald adds timestamps). The level is set once at start-up.
#pragma once

#include <string>

namespace arbd {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool parseLogLevel(const std::string& text, LogLevel* level);
void setLogLevel(LogLevel level);
bool logEnabled(LogLevel level);
void logf(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace arbd
