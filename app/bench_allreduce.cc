// `dtlab-cli bench allreduce`: all-reduce between separate processes on this machine,
// DTLab's choice against each of Gloo's built-in algorithms used directly, plus what a
// plain TCP stream between two processes reaches (the ceiling of any algorithm here).
// Each measurement runs in fresh processes (this binary, hidden subcommands below).
#include "app/bench_allreduce.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gloo/rendezvous/file_store.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/comm/comm_bench.h"
#include "core/comm/gloo_communicator.h"
#include "core/train/core_bench.h"

extern char** environ;

namespace dtlab::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string selfExe() {
  return fs::read_symlink("/proc/self/exe").string();
}

// Starts this binary with args, stdout to `out`; returns the pid.
pid_t spawnSelf(const std::vector<std::string>& args, const fs::path& out) {
  std::vector<std::string> all = {selfExe()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + all[0] + ": " + std::strerror(rc));
  return pid;
}

// Waits for every pid; throws naming the first that failed.
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

nlohmann::json measureAlgorithm(const fs::path& dir, int nodes, int64_t bytes, int iters,
                                const std::string& algorithm) {
  const fs::path store = dir / ("store-" + algorithm);
  fs::create_directories(store);
  std::vector<pid_t> pids;
  for (int r = 0; r < nodes; ++r) {
    pids.push_back(spawnSelf(
        {"bench", "allreduce-rank", "--rank", std::to_string(r), "--world", std::to_string(nodes),
         "--store", store.string(), "--bytes", std::to_string(bytes), "--iters",
         std::to_string(iters), "--algorithm", algorithm},
        dir / ("out-" + algorithm + "-" + std::to_string(r))));
  }
  waitAll(pids, "all-reduce " + algorithm);
  return lastJsonLine(dir / ("out-" + algorithm + "-0"));
}

nlohmann::json measureTcp(const fs::path& dir, int64_t bytes, int iters) {
  const fs::path portFile = dir / "tcp-port";
  const pid_t receiver =
      spawnSelf({"bench", "tcp-rank", "--role", "recv", "--port-file", portFile.string(), "--bytes",
                 std::to_string(bytes), "--iters", std::to_string(iters)},
                dir / "out-tcp-recv");
  const pid_t sender =
      spawnSelf({"bench", "tcp-rank", "--role", "send", "--port-file", portFile.string(), "--bytes",
                 std::to_string(bytes), "--iters", std::to_string(iters)},
                dir / "out-tcp-send");
  waitAll({receiver, sender}, "tcp stream");
  return lastJsonLine(dir / "out-tcp-send");
}

void writeAll(int fd, const char* data, int64_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, static_cast<std::size_t>(std::min<int64_t>(n, 1 << 20)), 0);
    if (w <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    data += w;
    n -= w;
  }
}

void readAll(int fd, char* data, int64_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, data, static_cast<std::size_t>(std::min<int64_t>(n, 1 << 20)), 0);
    if (r <= 0) throw std::runtime_error("recv: connection closed");
    data += r;
    n -= r;
  }
}

}  // namespace

int benchAllReduceCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--local-nodes", "--bytes", "--iters"}, {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  const int nodes = static_cast<int>(args.integer("--local-nodes", 2, 1, 64));
  const int64_t bytes = args.integer("--bytes", 16 << 20, 4, int64_t{1} << 32);
  const int iters = static_cast<int>(args.integer("--iters", 20, 1, 100000));
  const fs::path dir =
      fs::temp_directory_path() / ("dtlab-bench-allreduce-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  std::printf("bench allreduce: %d local processes, %lld bytes, %d timed iterations each\n", nodes,
              static_cast<long long>(bytes), iters);
  std::printf("  %-22s %10s %12s %12s %8s\n", "algorithm", "median_us", "algbw_GB/s", "busbw_GB/s",
              "wrong");
  nlohmann::json rows = nlohmann::json::array();
  double bestGloo = 0.0;
  double ours = 0.0;
  for (const std::string algorithm :
       {"auto", "ring", "ring_chunked", "halving_doubling", "gloo_allreduce"}) {
    const nlohmann::json r = measureAlgorithm(dir, nodes, bytes, iters, algorithm);
    const double busbw = r.at("busbw_gbps").get<double>();
    std::printf("  %-22s %10.0f %12.3f %12.3f %8lld\n",
                algorithm == "auto" ? "dtlab (auto)" : ("gloo " + algorithm).c_str(),
                r.at("median_s").get<double>() * 1e6, r.at("algbw_gbps").get<double>(), busbw,
                r.at("wrong").get<long long>());
    std::fflush(stdout);
    if (algorithm == "auto")
      ours = busbw;
    else
      bestGloo = std::max(bestGloo, busbw);
    rows.push_back(r);
  }
  nlohmann::json out = {{"bench", "allreduce"},
                        {"nodes", nodes},
                        {"bytes", bytes},
                        {"algorithms", rows},
                        {"busbw_gbps", ours},
                        {"best_gloo_busbw_gbps", bestGloo},
                        {"ratio_vs_best_gloo", ours / bestGloo}};
  std::printf("  dtlab / best Gloo algorithm (busbw): %.2fx\n", ours / bestGloo);
  if (nodes >= 2) {
    const nlohmann::json tcp = measureTcp(dir, bytes, iters);
    std::printf("  plain TCP stream between two processes: %.3f GB/s (the ceiling here)\n",
                tcp.at("gbps").get<double>());
    out["tcp_stream_gbps"] = tcp.at("gbps");
  }
  if (args.has("--json")) std::printf("%s\n", out.dump().c_str());
  return 0;
}

int benchAllReduceRank(const std::vector<std::string>& argv) {
  const Args args(argv, {"--rank", "--world", "--store", "--bytes", "--iters", "--algorithm"}, {});
  const int rank = static_cast<int>(args.integer("--rank", 0, 0, 1023));
  const int world = static_cast<int>(args.integer("--world", 1, 1, 1024));
  const int64_t bytes = args.integer("--bytes", 16 << 20, 4, int64_t{1} << 32);
  const int iters = static_cast<int>(args.integer("--iters", 20, 1, 100000));
  gloo::rendezvous::FileStore store(args.value("--store", "/tmp"));
  core::GlooOptions options;
  options.allReduceAlgorithm = core::parseAllReduceAlgorithm(args.value("--algorithm", "auto"));
  core::GlooCommunicator comm(store, rank, world, options);
  const core::AllReduceBenchResult r = core::benchAllReduce(comm, bytes, 3, iters);
  comm.barrier();
  if (rank == 0) {
    std::printf("%s\n", nlohmann::json{{"algorithm", args.value("--algorithm", "auto")},
                                       {"median_s", r.medianSeconds},
                                       {"algbw_gbps", r.algbwGBps},
                                       {"busbw_gbps", r.busbwGBps},
                                       {"wrong", r.wrong}}
                            .dump()
                            .c_str());
  }
  return r.wrong == 0 ? 0 : 1;
}

int benchTcpRank(const std::vector<std::string>& argv) {
  const Args args(argv, {"--role", "--port-file", "--bytes", "--iters"}, {});
  const std::string role = args.value("--role", "");
  const fs::path portFile = args.value("--port-file", "");
  const int64_t bytes = args.integer("--bytes", 16 << 20, 1, int64_t{1} << 32);
  const int iters = static_cast<int>(args.integer("--iters", 20, 1, 100000));
  std::vector<char> buffer(static_cast<std::size_t>(bytes), 1);
  char ack = 0;
  if (role == "recv") {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
    { std::ofstream(portFile.string() + ".tmp") << ntohs(addr.sin_port); }
    fs::rename(portFile.string() + ".tmp", portFile);
    const int fd = ::accept(listener, nullptr, nullptr);
    for (int i = 0; i < iters + 3; ++i) {
      readAll(fd, buffer.data(), bytes);
      writeAll(fd, &ack, 1);
    }
    ::close(fd);
    ::close(listener);
    return 0;
  }
  if (role != "send") throw UsageError("--role: expected send or recv");
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (!fs::exists(portFile)) {
    if (Clock::now() > deadline) throw std::runtime_error("the receiver never reported its port");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int port = 0;
  std::ifstream(portFile) >> port;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
  std::vector<double> seconds;
  for (int i = 0; i < iters + 3; ++i) {
    const Clock::time_point t0 = Clock::now();
    writeAll(fd, buffer.data(), bytes);
    readAll(fd, &ack, 1);
    if (i >= 3) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  ::close(fd);
  std::printf("%s\n",
              nlohmann::json{{"gbps", static_cast<double>(bytes) / core::median(seconds) * 1e-9}}
                  .dump()
                  .c_str());
  return 0;
}

}  // namespace dtlab::app
