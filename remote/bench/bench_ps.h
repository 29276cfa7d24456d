#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// `dtlab-cli bench ps`: the parameter server's data plane against Gloo moving the same bytes
// between the same processes. One server process serves every block of a model of `params`
// floats over the real ParameterServer gRPC service and its stream (parameter_stream.h; the
// blocks, their optimizer and the board of async_ps); `workers` worker processes each run
// `steps` steps per repetition of a pull of every block and a push of a gradient to every
// block through GrpcParameterClient, as an async_ps worker does between its computes: once
// over the stream (what a plain-text cluster uses) and once over gRPC alone (what a TLS
// cluster uses). The reference, in the same processes: each worker sends the gradient's bytes
// to the server over a Gloo pair and receives the parameters' bytes back. Sides interleaved
// per repetition, between barriers of every process; the figure per repetition is the
// slowest worker's time per step; medians.
//
// The gradients pushed are zeros (plain SGD, no momentum or decay), so every pull must return
// the initial parameters bit for bit: both sides' received values are checked after each
// repetition (`wrong`).
//
// The processes are the running binary, started as `<self> bench ps-rank ...`: a binary that
// calls runPsBench must dispatch that subcommand to runPsRank (dtlab-cli does).
struct PsBenchOptions {
  int64_t params = 1'300'000;  // the model: 1.3 M parameters
  int workers = 2;
  int steps = 10;
  int repetitions = 7;
  int warmup = 1;
};

struct PsBenchResult {
  double dtlabMs = 0.0;    // pull + push per step over the stream, the slowest worker's, median
  double grpcMs = 0.0;     // the same over gRPC alone (TLS clusters)
  double glooMs = 0.0;     // the same bytes over Gloo pairs
  double ratio = 0.0;      // dtlabMs / glooMs: 1.5 or less is the target
  double grpcRatio = 0.0;  // grpcMs / glooMs
  int64_t wrong = 0;       // values received wrong, over both sides and every worker
  nlohmann::json json;     // everything measured: the CLI's --json line
};

// Prints the report to `out`; throws when a process fails.
PsBenchResult runPsBench(const PsBenchOptions& options, std::FILE* out);

// One process of the comparison: "server" or "worker" `rank` (0-based) of `workers`, meeting
// the others through files in `dir`; prints one JSON line to `out`.
struct PsRankOptions {
  std::string role;
  int rank = 0;
  std::string dir;
  PsBenchOptions bench;
};
void runPsRank(const PsRankOptions& options, std::FILE* out);

}  // namespace dtlab::bench
