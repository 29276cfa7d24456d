#pragma once

#include <string>
#include <string_view>

#include "core/common/check.h"

namespace dtlab::remote {

// A daemon's log: one line per message on stderr, "<time> <source> <level>: <text>".
// Thread-safe; lines are written whole.
enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info", "debug"; throws dtlab::Error listing them otherwise.
LogLevel parseLogLevel(std::string_view text);
void setLogLevel(LogLevel level);
// The name in front of every line, e.g. "dtlab-node[node-1]".
void setLogSource(std::string source);
bool logEnabled(LogLevel level);
void logLine(LogLevel level, const std::string& text);

template <typename... Args>
void logAt(LogLevel level, const Args&... args) {
  if (logEnabled(level)) logLine(level, detail::concat(args...));
}

}  // namespace dtlab::remote
