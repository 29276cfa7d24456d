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
#include <sys/socket.h>
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
#include "remote/bench/rank_processes.h"

namespace dtlab::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Runs every rank of the comparison; returns each rank's JSON line, by rank.
std::vector<nlohmann::json> measureAllReduce(const fs::path& dir, int nodes, int64_t bytes,
                                             int warmup, int reps, const std::string& algorithm,
                                             bool sharedMemory) {
  const fs::path store = dir / "store";
  fs::create_directories(store);
  std::vector<pid_t> pids;
  for (int r = 0; r < nodes; ++r) {
    pids.push_back(spawnSelf(
        {"bench", "allreduce-rank", "--rank", std::to_string(r), "--world", std::to_string(nodes),
         "--store", store.string(), "--bytes", std::to_string(bytes), "--warmup",
         std::to_string(warmup), "--reps", std::to_string(reps), "--algorithm", algorithm,
         "--transport", sharedMemory ? "auto" : "tcp"},
        dir / ("out-allreduce-" + std::to_string(r))));
  }
  waitAll(pids, "all-reduce comparison");
  std::vector<nlohmann::json> ranks;
  for (int r = 0; r < nodes; ++r)
    ranks.push_back(lastJsonLine(dir / ("out-allreduce-" + std::to_string(r))));
  return ranks;
}

nlohmann::json measureTcp(const fs::path& dir, int64_t bytes, int iters) {
  const fs::path portFile = dir / ("tcp-port-" + std::to_string(bytes));
  fs::remove(portFile);  // a stale one would name a receiver that is gone
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

namespace {

// "64K", "1M": the sizes as the --bytes flag takes them.
std::string sizeFlagText(int64_t bytes) {
  if (bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % (int64_t{1} << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// One rank count and size: every rank's JSON line turned into a row (timings are rank 0's:
// every rank leaves the closing barrier together; wrong elements are counted on every rank).
AllReduceBenchRow rowOf(const std::vector<nlohmann::json>& ranks, int nodes, double tcpGBps,
                        nlohmann::json& sides) {
  const nlohmann::json& first = ranks.front();
  AllReduceBenchRow row;
  row.nodes = nodes;
  row.bytes = first.at("bytes").get<int64_t>();
  row.dtlabAlgorithm = first.at("algorithm").get<std::string>();
  row.tcpStreamGBps = tcpGBps;
  sides = nlohmann::json::array();
  for (std::size_t i = 0; i < first.at("sides").size(); ++i) {
    nlohmann::json side = first.at("sides")[i];
    int64_t wrong = 0;
    for (const nlohmann::json& rank : ranks)
      wrong += rank.at("sides")[i].at("wrong").get<int64_t>();
    side["wrong"] = wrong;
    row.wrong += wrong;
    const double busbw = side.at("busbw_gbps").get<double>();
    if (i == 0) {
      row.busbwGBps = busbw;
    } else if (busbw > row.bestGlooBusbwGBps) {
      row.bestGlooBusbwGBps = busbw;
      row.bestGloo = side.at("name").get<std::string>();
    }
    sides.push_back(side);
  }
  return row;
}

}  // namespace

AllReduceBenchResult runAllReduceBench(const AllReduceBenchOptions& options, std::FILE* out) {
  const int reps = options.repetitions;
  const int warmup = options.warmup;
  const ScratchDir scratch("dtlab-bench-allreduce");
  const fs::path& dir = scratch.path();

  std::fprintf(
      out,
      "bench allreduce: local processes, in place on one buffer per process; DTLab's side runs\n"
      "  what its tuning pass chose (as a run's group does when it forms); per side %d timed\n"
      "  repetitions (after %d untimed), each the wall clock between two barriers around\n"
      "  back-to-back all-reduces, sides interleaved; medians per call; busbw in GB/s (what\n"
      "  each rank's link carries: algbw * 2(n-1)/n); the TCP stream: one direction between two\n"
      "  processes, the same bytes per message\n"
      "  DTLab's transport: %s\n",
      reps, warmup,
      options.sharedMemory
          ? "auto (these ranks share a host, so its choices include shared memory; Gloo's sides "
            "and the TCP stream use loopback TCP)"
          : "tcp (shared memory off: what ranks on separate hosts would run)");
  std::fprintf(out, "  %s\n\n", machineDescription().c_str());
  std::fprintf(out,
               "| ranks | bytes | DTLab (its choice) | ring | ring_chunked | halving_doubling | "
               "gloo::allreduce | DTLab / best Gloo | TCP stream | DTLab / TCP | wrong |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(out);

  AllReduceBenchResult result;
  nlohmann::json rows = nlohmann::json::array();
  std::string tuningNotes;  // what each row's tuning pass measured, printed after the table
  for (const int64_t bytes : options.sizes) {
    const double tcp = measureTcp(dir, bytes, reps).at("gbps").get<double>();
    for (const int nodes : options.nodeCounts) {
      const fs::path runDir = dir / (std::to_string(nodes) + "-" + std::to_string(bytes));
      fs::create_directories(runDir);
      nlohmann::json sides;
      const std::vector<nlohmann::json> ranks = measureAllReduce(
          runDir, nodes, bytes, warmup, reps,
          std::string(core::allReduceAlgorithmName(options.algorithm)), options.sharedMemory);
      const AllReduceBenchRow row = rowOf(ranks, nodes, tcp, sides);
      std::fprintf(out, "| %d | %s | %.3f (%s) |", nodes, core::byteSizeText(row.bytes).c_str(),
                   row.busbwGBps, row.dtlabAlgorithm.c_str());
      for (std::size_t i = 1; i < sides.size(); ++i)
        std::fprintf(out, " %.3f |", sides[i].at("busbw_gbps").get<double>());
      std::fprintf(out, " **%.2fx** | %.3f | %.0f%% | %lld |\n",
                   row.busbwGBps / row.bestGlooBusbwGBps, tcp, 100.0 * row.busbwGBps / tcp,
                   static_cast<long long>(row.wrong));
      std::fflush(out);
      const nlohmann::json& tuned = ranks.front().value("tuning", nlohmann::json::array());
      if (!tuned.empty()) {
        tuningNotes += "  " + std::to_string(nodes) + " ranks, " + core::byteSizeText(row.bytes) +
                       ": measured at " +
                       core::byteSizeText(tuned.front().at("bytes").get<int64_t>()) + ":";
        for (const nlohmann::json& c : tuned) {
          char figure[64];
          std::snprintf(figure, sizeof figure, " %s %.3f",
                        c.at("algorithm").get<std::string>().c_str(),
                        c.at("busbw_gbps").get<double>());
          tuningNotes += figure;
        }
        tuningNotes += "\n";
      }
      rows.push_back({{"nodes", nodes},
                      {"bytes", row.bytes},
                      {"calls_per_repetition", ranks.front().at("calls")},
                      {"algorithm", row.dtlabAlgorithm},
                      {"tuning", tuned},
                      {"sides", sides},
                      {"busbw_gbps", row.busbwGBps},
                      {"best_gloo", row.bestGloo},
                      {"best_gloo_busbw_gbps", row.bestGlooBusbwGBps},
                      {"ratio_vs_best_gloo", row.busbwGBps / row.bestGlooBusbwGBps},
                      {"tcp_stream_gbps", tcp},
                      {"ratio_vs_tcp_stream", row.busbwGBps / tcp},
                      {"wrong", row.wrong}});
      result.wrong += row.wrong;
      result.rows.push_back(row);
    }
  }
  if (!tuningNotes.empty())
    std::fprintf(out,
                 "\n  DTLab's tuning pass, busbw in GB/s per candidate (its choice: the fastest; "
                 "a short pass, so a noisy machine can make it pick a loser):\n%s",
                 tuningNotes.c_str());
  std::fprintf(out, "\n  sizes as --bytes takes them:");
  for (const int64_t bytes : options.sizes) std::fprintf(out, " %s", sizeFlagText(bytes).c_str());
  std::fprintf(out, "\n");
  result.json = {{"bench", "allreduce"},
                 {"machine", machineDescription()},
                 {"transport", options.sharedMemory ? "auto" : "tcp"},
                 {"repetitions", reps},
                 {"rows", rows},
                 {"wrong", result.wrong}};
  return result;
}

void runAllReduceRank(const AllReduceRankOptions& options, std::FILE* out) {
  const int rank = options.rank;
  const int world = options.world;
  core::AllReduceBenchConfig config = options.config;
  gloo::rendezvous::FileStore store(options.storeDir);
  core::GlooOptions gloo;
  gloo.allReduceAlgorithm = options.algorithm;
  gloo.sharedMemory = options.sharedMemory;
  core::GlooCommunicator comm(store, rank, world, gloo);
  const int64_t count = config.bytes / static_cast<int64_t>(sizeof(float));
  // What a run does when its group forms (the sync strategy tunes up to its gradient's size).
  std::vector<float> scratch(static_cast<std::size_t>(count));
  const core::AllReduceTuning tuning = comm.tuneAllReduce(scratch.data(), count);
  const std::string algorithm(core::allReduceAlgorithmName(comm.algorithmFor(count)));
  // What the pass measured at the size it chose by (busbw, as the table's columns).
  nlohmann::json tuned = nlohmann::json::array();
  if (!tuning.empty()) {
    const core::AllReduceTuning::SizeClass& size = tuning.sizes[tuning.sizeIndexFor(config.bytes)];
    for (const core::AllReduceTuning::Candidate& c : size.candidates)
      tuned.push_back({{"algorithm", c.algorithm},
                       {"bytes", size.bytes},
                       {"busbw_gbps", core::busBandwidthGBps(size.bytes, c.seconds, world)}});
  }
  config.dtlabName = "dtlab (" + algorithm + ")";
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
  std::fprintf(out, "%s\n",
               nlohmann::json{{"rank", rank},
                              {"bytes", r.bytes},
                              {"calls", r.callsPerRepetition},
                              {"algorithm", algorithm},
                              {"tuning", tuned},
                              {"sides", sides}}
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
