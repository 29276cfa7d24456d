#pragma once

#include <string>
#include <string_view>

#include "core/common/check.h"

namespace dtlab {

// The log of DTLab's processes (a daemon's above all): one line per message on stderr,
// "<time> <source> <level>: <text>". Thread-safe; lines are written whole. Where an error
// cannot be thrown (a destructor), it is logged here rather than dropped.
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

// Inside a catch block that cannot rethrow (a destructor): logs the exception being handled as
// "<where>: <what>" at `level`, so that the error is seen instead of dropped.
void logCurrentException(LogLevel level, std::string_view where);

}  // namespace dtlab
