#include "remote/cluster/local_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/backend/backend.h"
#include "core/common/check.h"
#include "core/common/program_path.h"

namespace dtlab::remote {
namespace {

using Clock = std::chrono::steady_clock;

// _Fork (glibc 2.34) runs no atfork handlers. Those of the libraries loaded here allocate
// (clang's OpenMP runtime re-initialises itself in the child), and a child of a multi-threaded
// process that allocates can hang before exec (seen in the ASan build: a node that never
// reported its port).
pid_t forkWithoutHandlers() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  return ::_Fork();
#else
  return ::fork();
#endif
}

// Reads the child's first stdout line ("dtlab-node listening on ADDR") within the timeout.
std::string readListenLine(int fd, Clock::time_point deadline, pid_t pid) {
  std::string line;
  char c = 0;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      throw Error("dtlab-node (pid " + std::to_string(pid) + ") did not report its port in time");
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 0)
      throw Error("dtlab-node (pid " + std::to_string(pid) + ") exited before listening" +
                  (line.empty() ? "" : ": " + line));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("reading dtlab-node output: ") + std::strerror(errno));
    }
    if (c == '\n') return line;
    if (line.size() < 4096) line += c;
  }
}

}  // namespace

std::vector<LocalNodeOptions> localNodeOptions(const core::ClusterConfig& cluster, int64_t count) {
  const bool cuda = cluster.device == "cuda";
  if (cuda) {
    const int gpus = core::cudaDeviceCount();
    if (gpus < count) {
      std::string why;
      for (const core::BackendInfo& b : core::availableBackends())
        if (b.name == "cuda" && !b.enabled) why = " (" + b.why + ")";
      throw Error("cluster.device \"cuda\" with " + std::to_string(count) + " local node" +
                  (count == 1 ? "" : "s") + " needs " + std::to_string(count) + " GPU" +
                  (count == 1 ? "" : "s") + ", one per node; this machine has " +
                  std::to_string(gpus) + why);
    }
  }
  std::vector<LocalNodeOptions> out;
  for (int64_t i = 0; i < count; ++i) {
    const core::NodeConfig node = cluster.nodes.empty() ? core::NodeConfig{} : cluster.node(i);
    LocalNodeOptions o;
    o.speed = node.speed;
    o.bandwidthMbps = node.bandwidthMbps;
    o.latencyMs = node.latencyMs;
    o.threads = cluster.threadsPerNode;
    if (cuda) o.devices = "cuda:" + std::to_string(i);
    out.push_back(o);
  }
  return out;
}

std::string defaultNodeBinary() {
  if (const char* env = std::getenv("DTLAB_NODE_BINARY")) return env;
  const std::filesystem::path self = core::programPath();
  if (self.empty()) return "dtlab-node";
  const std::filesystem::path beside = self.parent_path() / "dtlab-node";
  if (std::filesystem::exists(beside)) return beside.string();
  // A test binary in build/tests/: the daemon lives in build/app/.
  const std::filesystem::path sibling = self.parent_path().parent_path() / "app" / "dtlab-node";
  if (std::filesystem::exists(sibling)) return sibling.string();
  return "dtlab-node";
}

LocalCluster::LocalCluster(std::string nodeBinary, const std::vector<LocalNodeOptions>& nodes,
                           std::string token, std::chrono::milliseconds startTimeout) {
  const Clock::time_point deadline = Clock::now() + startTimeout;
  const pid_t parent = ::getpid();
  try {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const LocalNodeOptions& o = nodes[i];
      std::vector<std::string> args = {
          nodeBinary, "--listen", "127.0.0.1:0", "--name", "node" + std::to_string(i), "--speed",
          std::to_string(o.speed), "--bandwidth-mbps", std::to_string(o.bandwidthMbps),
          "--latency-ms", std::to_string(o.latencyMs), "--threads", std::to_string(o.threads),
          "--devices", o.devices,
          // The launcher's own stderr is the user's terminal:
          // only problems, not every start and stop.
          "--log-level", "warn"};
      // The token goes in the daemon's environment, which it reads and unsets: on the command
      // line every account on the machine would see it in the process list.
      std::vector<std::string> environment;
      for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "DTLAB_TOKEN=", 12) != 0) environment.emplace_back(*e);
      if (!token.empty()) environment.push_back("DTLAB_TOKEN=" + token);
      if (o.tls.enabled())
        args.insert(args.end(),
                    {"--tls-cert", o.tls.cert, "--tls-key", o.tls.key, "--tls-ca", o.tls.ca});
      // Everything the child needs is made here: between fork and exec a child of a
      // multi-threaded process may only make async-signal-safe calls (an allocation can wait
      // for good on a lock another thread held at the fork).
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      std::vector<char*> envp;
      for (std::string& e : environment) envp.push_back(e.data());
      envp.push_back(nullptr);
      const std::string cannot = "cannot start " + args[0] + ": ";
      int pipeFds[2];
      if (::pipe2(pipeFds, O_CLOEXEC) != 0)
        throw Error(std::string("pipe: ") + std::strerror(errno));
      const pid_t pid = forkWithoutHandlers();
      if (pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) {
        // Child: die with the launcher, whatever kills it.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
        ::dup2(pipeFds[1], STDOUT_FILENO);
        ::execve(argv[0], argv.data(), envp.data());
        const char* why = ::strerrordesc_np(errno);  // a static string, unlike strerror's
        ssize_t ignored = ::write(STDOUT_FILENO, cannot.data(), cannot.size());
        ignored = ::write(STDOUT_FILENO, why, std::strlen(why));
        ignored = ::write(STDOUT_FILENO, "\n", 1);
        (void)ignored;
        ::_exit(127);
      }
      ::close(pipeFds[1]);
      // The read end stays open for the daemon's lifetime: closing it would turn any
      // later stdout write of the daemon into SIGPIPE. (It writes one line; logs go to stderr.)
      nodes_.push_back({pid, {}, false, pipeFds[0]});
      const std::string line = readListenLine(pipeFds[0], deadline, pid);
      const std::string prefix = "dtlab-node listening on ";
      if (line.rfind(prefix, 0) != 0)
        throw Error("dtlab-node " + std::to_string(i) + " said: " + line);
      nodes_.back().address = line.substr(prefix.size());
    }
  } catch (...) {
    stop(std::chrono::seconds(2));
    throw;
  }
}

LocalCluster::~LocalCluster() {
  stop();
}

std::vector<std::string> LocalCluster::addresses() const {
  std::vector<std::string> out;
  for (const Node& n : nodes_) out.push_back(n.address);
  return out;
}

void LocalCluster::signal(int i, int sig) {
  const Node& n = nodes_.at(static_cast<std::size_t>(i));
  if (!n.reaped) ::kill(n.pid, sig);
}

void LocalCluster::stop(std::chrono::milliseconds grace) {
  for (Node& n : nodes_) {
    if (n.reaped) continue;
    ::kill(n.pid, SIGTERM);
    // A stopped daemon (SIGSTOP, a debugger) would hold its SIGTERM until the grace ran out.
    ::kill(n.pid, SIGCONT);
  }
  const Clock::time_point deadline = Clock::now() + grace;
  for (Node& n : nodes_) {
    while (!n.reaped) {
      int status = 0;
      const pid_t r = ::waitpid(n.pid, &status, WNOHANG);
      if (r == n.pid || (r < 0 && errno == ECHILD)) {
        n.reaped = true;
        break;
      }
      if (Clock::now() >= deadline) {
        ::kill(n.pid, SIGKILL);
        ::waitpid(n.pid, &status, 0);
        n.reaped = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (n.stdoutFd >= 0) ::close(n.stdoutFd);
    n.stdoutFd = -1;
  }
}

}  // namespace dtlab::remote
