#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/comm_bench.h"
#include "core/comm/gloo_communicator.h"

namespace dtlab::bench {

// `dtlab-cli bench allreduce`: all-reduce between local processes, for every rank count and
// message size asked for: DTLab's choice (after the tuning pass a run makes when its group
// forms) against each of Gloo's built-in algorithms used directly, both sides in the same rank
// processes with their repetitions interleaved, plus what a plain TCP stream between two
// processes reaches at that size (the ceiling of any algorithm here). One table, a row per
// rank count and size.
//
// The rank processes are the running binary, started as `<self> bench allreduce-rank ...` and
// `<self> bench tcp-rank ...`: a binary that calls runAllReduceBench must dispatch those two
// subcommands to runAllReduceRank and runTcpRank (dtlab-cli does).
struct AllReduceBenchOptions {
  std::vector<int> nodeCounts = {2, 3, 4};
  std::vector<int64_t> sizes = {int64_t{64} << 10, int64_t{256} << 10, int64_t{1} << 20,
                                int64_t{4} << 20,  int64_t{16} << 20,  int64_t{64} << 20};
  int repetitions = 10;
  int warmup = 2;
  // DTLab's side: kAuto runs what the tuning pass chose; another forces that algorithm (to
  // see one algorithm against Gloo's when working on it).
  core::AllReduceAlgorithm algorithm = core::AllReduceAlgorithm::kAuto;
  // False: DTLab's groups stay on TCP (GlooOptions::sharedMemory), as ranks on separate hosts
  // would; true: they may all-reduce through shared memory, as local nodes of a run do.
  bool sharedMemory = true;
};

// One rank count and size.
struct AllReduceBenchRow {
  int nodes = 0;
  int64_t bytes = 0;
  std::string dtlabAlgorithm;  // what DTLab's tuned choice ran
  double busbwGBps = 0.0;      // DTLab's
  std::string bestGloo;        // the Gloo algorithm with the highest busbw
  double bestGlooBusbwGBps = 0.0;
  double tcpStreamGBps = 0.0;
  int64_t wrong = 0;  // wrong elements over every side and rank; nonzero is a failure
};

struct AllReduceBenchResult {
  std::vector<AllReduceBenchRow> rows;
  int64_t wrong = 0;    // over every row
  nlohmann::json json;  // everything measured: the CLI's --json line
};

// Prints the table to `out` as it measures.
AllReduceBenchResult runAllReduceBench(const AllReduceBenchOptions& options, std::FILE* out);

// One rank of the comparison: joins the others through a file store in `storeDir` and
// prints its measurements as one JSON line to `out`.
struct AllReduceRankOptions {
  int rank = 0;
  int world = 1;
  std::string storeDir = "/tmp";
  core::AllReduceAlgorithm algorithm = core::AllReduceAlgorithm::kAuto;
  bool sharedMemory = true;
  core::AllReduceBenchConfig config;
};
void runAllReduceRank(const AllReduceRankOptions& options, std::FILE* out);

// One end of the TCP stream: the receiver listens on loopback and writes its port to
// `portFile`; the sender connects there, times `iterations` round trips of `bytes` and prints
// {"gbps": ...} to `out`.
struct TcpRankOptions {
  bool receiver = false;
  std::string portFile;
  int64_t bytes = 16 << 20;
  int iterations = 20;
};
void runTcpRank(const TcpRankOptions& options, std::FILE* out);

}  // namespace dtlab::bench
