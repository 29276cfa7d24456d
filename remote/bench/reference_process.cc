#include "remote/bench/reference_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/common/program_path.h"

extern char** environ;

namespace dtlab::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command and returns the JSON object on the last line of its stdout.
nlohmann::json runJsonCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  if (status != 0)
    throw std::runtime_error("reference failed (exit " + std::to_string(status) + "): " + command);
  const auto end = output.find_last_not_of('\n');
  const auto begin = output.find_last_of('\n', end);
  return nlohmann::json::parse(output.substr(begin == std::string::npos ? 0 : begin + 1));
}

// A Python that can import torch: Debian's python3-torch lives under /usr/bin/python3,
// which a user's PATH may shadow (pyenv), so that one is tried first.
std::optional<std::string> torchPython() {
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return std::string(candidate);
  }
  return std::nullopt;
}

}  // namespace

std::string resourcesDir(const std::string& part) {
  if (const char* env = std::getenv("DTLAB_RESOURCES"))
    return (std::filesystem::path(env) / part).string();
  const std::filesystem::path program = core::programPath();
  if (!program.empty()) {
    // installer/packaging.cmake: /usr/bin/dtlab-cli, /usr/share/dtlab/{bench,examples}.
    const std::filesystem::path installed = program.parent_path().parent_path() / "share" /
                                            "dtlab" / (part == "specs" ? "examples" : part);
    std::error_code ec;
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return (std::filesystem::path(DTLAB_SOURCE_DIR) / "resources" / part).string();
}

ReferenceProcess::ReferenceProcess(std::vector<std::string> argv,
                                   const std::map<std::string, std::string>& env) {
  if (argv.empty()) throw std::invalid_argument("ReferenceProcess: empty command");
  for (const std::string& a : argv) command_ += (command_.empty() ? "" : " ") + a;
  // A reference that dies between two requests must give us an error, not a SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos && env.count(entry.substr(0, eq)) != 0) continue;
    envStrings.push_back(entry);
  }
  for (const auto& [key, value] : env) envStrings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  int in[2];   // we write, the child reads
  int out[2];  // the child writes, we read
  if (::pipe2(in, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // Its own process group, so that a reference that does not exit when asked is stopped
  // with every process it started (PyTorch DDP's ranks), not just the first.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const int rc = posix_spawnp(&pid_, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  toChild_ = in[1];
  fromChild_ = out[0];
  if (rc != 0) {
    ::close(toChild_);
    ::close(fromChild_);
    throw std::runtime_error("cannot start " + command_ + ": " + std::strerror(rc));
  }
}

ReferenceProcess::~ReferenceProcess() {
  ::close(toChild_);  // end of input: the reference exits
  ::close(fromChild_);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  // Waits without reaping: while the leader is a zombie its pid, and so its group's id, cannot
  // be reused, so the kill below reaches only processes it started.
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid == pid_)
      break;
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "the reference (%s) did not exit when asked; killing its processes\n",
                   command_.c_str());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Whatever is left of its group (nothing, when it is well behaved) goes with it.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

nlohmann::json ReferenceProcess::readJson(std::chrono::seconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    for (auto newline = buffered_.find('\n'); newline != std::string::npos;
         newline = buffered_.find('\n')) {
      const std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      if (line.empty() || line.front() != '{') continue;
      nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
      if (parsed.is_object()) return parsed;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      throw std::runtime_error("the reference (" + command_ + ") did not answer within " +
                               std::to_string(timeout.count()) + " s");
    pollfd p{fromChild_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::strerror(errno));
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fromChild_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the reference (" + command_ + ") exited early");
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

nlohmann::json ReferenceProcess::request(const std::string& line, std::chrono::seconds timeout) {
  const std::string text = line + "\n";
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::write(toChild_, text.data() + sent, text.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the reference (" + command_ + ") is gone");
    sent += static_cast<std::size_t>(n);
  }
  return readJson(timeout);
}

std::map<std::string, std::string> TorchReference::environment(int threads) const {
  std::map<std::string, std::string> env = {{"OPENBLAS_NUM_THREADS", std::to_string(threads)},
                                            {"OMP_NUM_THREADS", std::to_string(threads)}};
  const std::string coretype = blas.value("coretype", "");
  if (!coretype.empty()) env["OPENBLAS_CORETYPE"] = coretype;
  return env;
}

std::optional<TorchReference> findTorchReference(int threads, std::FILE* out) {
  const std::optional<std::string> python = torchPython();
  if (!python) {
    std::fprintf(
        out,
        "  reference: PyTorch not installed (installer/dev.sh deps --bench installs it); no "
        "ratio\n");
    return std::nullopt;
  }
  TorchReference reference;
  reference.python = *python;
  reference.scripts = resourcesDir("bench");
  std::fprintf(out,
               "  choosing PyTorch's OpenBLAS kernel (sgemm at %d thread%s, each kernel in fresh "
               "processes) ...\n",
               threads, threads == 1 ? "" : "s");
  std::fflush(out);
  reference.blas = runJsonCommand(*python + " " + quoted(reference.scripts + "/blas_probe.py") +
                                  " --threads " + std::to_string(threads));
  return reference;
}

void printBlasChoice(const TorchReference& reference, std::FILE* out) {
  const nlohmann::json& b = reference.blas;
  auto text = [&](const char* key, const char* fallback) {
    return b.contains(key) && b[key].is_string() ? b[key].get<std::string>()
                                                 : std::string(fallback);
  };
  const bool openblas = b.contains("openblas") && b["openblas"].is_string();
  std::fprintf(out, "  PyTorch's BLAS: %s -> %s (%s, %s threading)\n",
               text("library", "(none found)").c_str(), text("implementation", "?").c_str(),
               text("openblas", "not OpenBLAS").c_str(), text("parallel", "unknown").c_str());
  if (!openblas) {
    std::fprintf(
        out,
        "  WARNING: not OpenBLAS: PyTorch's GEMM runs on the reference BLAS (a few GFLOP/s), so "
        "any ratio below is meaningless; installer/dev.sh deps --bench installs and selects "
        "OpenBLAS\n");
    return;
  }
  if (text("parallel", "") != "openmp")
    std::fprintf(
        out,
        "  WARNING: OpenBLAS's %s build: its threads and PyTorch's OpenMP threads fight over "
        "the cores (PyTorch's step at 2 threads several times slower, measured here); "
        "installer/dev.sh deps --bench selects the OpenMP build for libblas.so.3 and "
        "libopenblas.so.0\n",
        text("parallel", "unknown").c_str());
  const int threads = b.value("threads", 0);
  std::fprintf(out,
               "  OpenBLAS kernels, sgemm %lldx%lldx%lld at %d thread%s, GFLOP/s (best of %d "
               "interleaved rounds):",
               b["shape"][0].get<long long>(), b["shape"][1].get<long long>(),
               b["shape"][2].get<long long>(), threads, threads == 1 ? "" : "s",
               b.value("rounds", 0));
  for (const nlohmann::json& c : b["candidates"]) {
    const std::string name = c["coretype"].get<std::string>();
    const std::string core = c["core"].is_string() ? c["core"].get<std::string>() : "?";
    std::fprintf(out, " %s%s %.1f", name.c_str(), name == "auto" ? (" (" + core + ")").c_str() : "",
                 c["gflops"].get<double>());
  }
  const std::string coretype = b.value("coretype", "");
  std::fprintf(out, "\n  -> %s\n",
               coretype.empty() ? "auto-detection is the fastest; left as is"
                                : ("OPENBLAS_CORETYPE=" + coretype).c_str());
}

}  // namespace dtlab::bench
