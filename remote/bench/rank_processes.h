#pragma once
// The processes of a benchmark whose sides run in several processes (bench allreduce, bench
// ps): copies of the running binary, started with a hidden subcommand, each printing one JSON
// line of measurements.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// A fresh directory under the system's temporary one, named after the benchmark and this
// process, removed with everything in it when this goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Starts `argv` (argv[0] found on PATH when it names no directory), its stdout (and, with
// `withStderr`, its stderr) to `out`; returns the pid.
pid_t spawnProcess(std::vector<std::string> argv, const std::filesystem::path& out,
                   bool withStderr = false);
// Starts this binary with `args`, its stdout to `out`; returns the pid.
pid_t spawnSelf(const std::vector<std::string>& args, const std::filesystem::path& out);

// Waits for every pid; throws naming the first that failed (`what` says which benchmark).
void waitAll(const std::vector<pid_t>& pids, const std::string& what);

// The last non-empty line of `file`, parsed.
nlohmann::json lastJsonLine(const std::filesystem::path& file);

}  // namespace dtlab::bench
