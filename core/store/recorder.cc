#include "core/store/recorder.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace dtlab::core {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string hostName() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
}

// Field 22 of /proc/<pid>/stat: the process's start, in clock ticks after boot ("" when the
// process does not exist, or is a zombie: it died and only its exit status waits for a parent
// that has not collected it, as under a container's init that reaps nothing). The command
// name (field 2) may hold spaces, so fields are counted after its closing parenthesis.
std::string startTicks(long pid) {
  const std::string stat = firstLine("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return "";
    if (i == 22) return field;
  }
  return "";
}

nlohmann::json parsed(const std::string& recorder) {
  const nlohmann::json r = nlohmann::json::parse(recorder, nullptr, /*allow_exceptions=*/false);
  return r.is_object() ? r : nlohmann::json::object();
}

std::string text(const nlohmann::json& r, const char* key) {
  return r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : "";
}

}  // namespace

std::string thisRecorder() {
  const long pid = static_cast<long>(::getpid());
  return nlohmann::json{{"host", hostName()},
                        {"boot", firstLine("/proc/sys/kernel/random/boot_id")},
                        {"pid", pid},
                        {"start", startTicks(pid)}}
      .dump();
}

RecorderState recorderState(const std::string& recorder) {
  // A run begun by a DTLab that stored no recorder: that process is taken as gone (running it
  // beside this build on one project is not supported).
  if (recorder.empty()) return RecorderState::kGone;
  const nlohmann::json r = parsed(recorder);
  const std::string host = text(r, "host");
  if (host.empty() || host != hostName() || !r.contains("pid") || !r["pid"].is_number_integer())
    return RecorderState::kUnknown;
  if (text(r, "boot") != firstLine("/proc/sys/kernel/random/boot_id"))
    return RecorderState::kGone;  // rebooted since
  const std::string start = startTicks(r["pid"].get<long>());
  return !start.empty() && start == text(r, "start") ? RecorderState::kAlive : RecorderState::kGone;
}

std::string describeRecorder(const std::string& recorder) {
  const nlohmann::json r = parsed(recorder);
  if (!r.contains("pid")) return "an earlier DTLab";
  return "pid " + r["pid"].dump() + " on " + text(r, "host");
}

}  // namespace dtlab::core
