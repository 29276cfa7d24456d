#include "core/common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace dtlab {

namespace {

std::atomic<int> gLevel{static_cast<int>(LogLevel::kInfo)};
std::mutex gMutex;
std::string gSource = "dtlab";  // guarded by gMutex

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

}  // namespace

LogLevel parseLogLevel(std::string_view text) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug})
    if (text == levelName(level)) return level;
  throw Error("expected one of error, warn, info, debug, got '" + std::string(text) + "'");
}

void setLogLevel(LogLevel level) {
  gLevel.store(static_cast<int>(level));
}

void setLogSource(std::string source) {
  std::lock_guard<std::mutex> lock(gMutex);
  gSource = std::move(source);
}

bool logEnabled(LogLevel level) {
  return static_cast<int>(level) <= gLevel.load();
}

void logCurrentException(LogLevel level, std::string_view where) {
  if (!logEnabled(level)) return;
  try {
    throw;
  } catch (const std::exception& e) {
    logLine(level, detail::concat(where, ": ", e.what()));
  } catch (...) {
    logLine(level, detail::concat(where, ": an exception of unknown type"));
  }
}

void logLine(LogLevel level, const std::string& text) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  std::lock_guard<std::mutex> lock(gMutex);
  std::fprintf(stderr, "%s.%03d %s %s: %s\n", stamp, static_cast<int>(millis), gSource.c_str(),
               levelName(level), text.c_str());
  std::fflush(stderr);
}

}  // namespace dtlab
