#include "remote/bench/rank_processes.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/common/program_path.h"

extern char** environ;

namespace dtlab::bench {
namespace {

namespace fs = std::filesystem;

std::string selfExe() {
  return core::programPath().string();
}

}  // namespace

ScratchDir::ScratchDir(const std::string& name)
    : path_(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
  fs::remove_all(path_);  // a stale one of an earlier process with the same pid
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

pid_t spawnProcess(std::vector<std::string> argv, const fs::path& out, bool withStderr) {
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (withStderr) posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

pid_t spawnSelf(const std::vector<std::string>& args, const fs::path& out) {
  std::vector<std::string> all = {selfExe()};
  all.insert(all.end(), args.begin(), args.end());
  return spawnProcess(std::move(all), out);
}

void waitAll(const std::vector<pid_t>& pids, const std::string& what) {
  std::string failure;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failure.empty())
      failure = what + ": a worker process (pid " + std::to_string(pid) + ") failed";
  }
  if (!failure.empty()) throw std::runtime_error(failure);
}

nlohmann::json lastJsonLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return nlohmann::json::parse(last);
}

}  // namespace dtlab::bench
