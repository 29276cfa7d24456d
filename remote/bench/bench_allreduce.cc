// `dtlab-cli bench allreduce`: all-reduce between separate processes on this machine,
// DTLab's choice against each of Gloo's built-in algorithms used directly, both sides in the
// same rank processes with their repetitions interleaved (core::benchAllReduce), plus what a
// plain TCP stream between two processes reaches (the ceiling of any algorithm here). The
// processes are this binary, started as `bench allreduce-rank` and `bench tcp-rank` (which
// dtlab-cli dispatches to runAllReduceRank and runTcpRank, below).
#include "remote/bench/bench_allreduce.h"

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

#include "core/comm/comm_bench.h"
#include "core/comm/gloo_communicator.h"
#include "core/train/core_bench.h"  // median
#include "remote/bench/bench_common.h"

extern char** environ;

namespace dtlab::bench {
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

// Runs every rank of the comparison; returns each rank's JSON line, by rank.
std::vector<nlohmann::json> measureAllReduce(const fs::path& dir, int nodes, int64_t bytes,
                                             int warmup, int reps) {
  const fs::path store = dir / "store";
  fs::create_directories(store);
  std::vector<pid_t> pids;
  for (int r = 0; r < nodes; ++r) {
    pids.push_back(spawnSelf(
        {"bench", "allreduce-rank", "--rank", std::to_string(r), "--world", std::to_string(nodes),
         "--store", store.string(), "--bytes", std::to_string(bytes), "--warmup",
         std::to_string(warmup), "--reps", std::to_string(reps)},
        dir / ("out-allreduce-" + std::to_string(r))));
  }
  waitAll(pids, "all-reduce comparison");
  std::vector<nlohmann::json> ranks;
  for (int r = 0; r < nodes; ++r)
    ranks.push_back(lastJsonLine(dir / ("out-allreduce-" + std::to_string(r))));
  return ranks;
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

AllReduceBenchResult runAllReduceBench(const AllReduceBenchOptions& options, std::FILE* out) {
  const int nodes = options.nodes;
  const int64_t bytes = options.bytes;
  const int reps = options.repetitions;
  const int warmup = options.warmup;
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

  std::fprintf(
      out,
      "bench allreduce: %d local processes, %lld bytes in place on one buffer per process; per\n"
      "  side %d timed repetitions (after %d untimed), each the wall clock between two barriers\n"
      "  around back-to-back all-reduces, sides interleaved; medians per call\n",
      nodes, static_cast<long long>(bytes), reps, warmup);
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  std::fflush(out);
  const std::vector<nlohmann::json> ranks = measureAllReduce(dir, nodes, bytes, warmup, reps);
  const nlohmann::json& first = ranks.front();
  std::fprintf(out, "  %lld calls per repetition\n", first.at("calls").get<long long>());
  std::fprintf(out, "  %-24s %10s %12s %12s %8s\n", "side", "median_us", "algbw_GB/s", "busbw_GB/s",
               "wrong");
  nlohmann::json sides = nlohmann::json::array();
  double ours = 0.0;
  double bestGloo = 0.0;
  std::string bestGlooName;
  int64_t wrongTotal = 0;
  for (std::size_t i = 0; i < first.at("sides").size(); ++i) {
    // Timings are rank 0's (every rank leaves the closing barrier together); wrong elements
    // are counted on every rank.
    nlohmann::json side = first.at("sides")[i];
    int64_t wrong = 0;
    for (const nlohmann::json& rank : ranks)
      wrong += rank.at("sides")[i].at("wrong").get<int64_t>();
    side["wrong"] = wrong;
    wrongTotal += wrong;
    const std::string name = side.at("name").get<std::string>();
    const double busbw = side.at("busbw_gbps").get<double>();
    std::fprintf(out, "  %-24s %10.0f %12.3f %12.3f %8lld\n", name.c_str(),
                 side.at("median_s").get<double>() * 1e6, side.at("algbw_gbps").get<double>(),
                 busbw, static_cast<long long>(wrong));
    if (i == 0) {
      ours = busbw;
    } else if (busbw > bestGloo) {
      bestGloo = busbw;
      bestGlooName = name;
    }
    sides.push_back(side);
  }
  std::fprintf(out, "  dtlab / best Gloo algorithm (%s), busbw: %.2fx\n", bestGlooName.c_str(),
               ours / bestGloo);
  AllReduceBenchResult result;
  nlohmann::json& json = result.json;
  json = {{"bench", "allreduce"},
          {"nodes", nodes},
          {"bytes", first.at("bytes")},
          {"repetitions", reps},
          {"calls_per_repetition", first.at("calls")},
          {"sides", sides},
          {"busbw_gbps", ours},
          {"best_gloo", bestGlooName},
          {"best_gloo_busbw_gbps", bestGloo},
          {"ratio_vs_best_gloo", ours / bestGloo},
          {"wrong", wrongTotal}};
  std::fflush(out);
  const nlohmann::json tcp = measureTcp(dir, bytes, reps);
  std::fprintf(out, "  plain TCP stream between two processes: %.3f GB/s (the ceiling here)\n",
               tcp.at("gbps").get<double>());
  json["tcp_stream_gbps"] = tcp.at("gbps");
  result.busbwGBps = ours;
  result.bestGloo = bestGlooName;
  result.bestGlooBusbwGBps = bestGloo;
  result.tcpStreamGBps = tcp.at("gbps").get<double>();
  result.wrong = wrongTotal;
  return result;
}

void runAllReduceRank(const AllReduceRankOptions& options, std::FILE* out) {
  const int rank = options.rank;
  const int world = options.world;
  core::AllReduceBenchConfig config = options.config;
  gloo::rendezvous::FileStore store(options.storeDir);
  core::GlooCommunicator comm(store, rank, world);
  const int64_t count = config.bytes / static_cast<int64_t>(sizeof(float));
  config.dtlabName =
      "dtlab (" + std::string(core::allReduceAlgorithmName(comm.algorithmFor(count))) + ")";
  const core::AllReduceBenchResult r = core::benchAllReduce(comm, store, config);
  nlohmann::json sides = nlohmann::json::array();
  for (const core::AllReduceSideResult& s : r.sides) {
    sides.push_back({{"name", s.name},
                     {"median_s", s.medianSeconds},
                     {"min_s", s.minSeconds},
                     {"algbw_gbps", s.algbwGBps},
                     {"busbw_gbps", s.busbwGBps},
                     {"wrong", s.wrong}});
  }
  std::fprintf(
      out, "%s\n",
      nlohmann::json{
          {"rank", rank}, {"bytes", r.bytes}, {"calls", r.callsPerRepetition}, {"sides", sides}}
          .dump()
          .c_str());
}

void runTcpRank(const TcpRankOptions& options, std::FILE* out) {
  const fs::path portFile = options.portFile;
  const int64_t bytes = options.bytes;
  const int iters = options.iterations;
  std::vector<char> buffer(static_cast<std::size_t>(bytes), 1);
  char ack = 0;
  if (options.receiver) {
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
    return;
  }
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
  std::fprintf(out, "%s\n",
               nlohmann::json{{"gbps", static_cast<double>(bytes) / core::median(seconds) * 1e-9}}
                   .dump()
                   .c_str());
}

}  // namespace dtlab::bench
