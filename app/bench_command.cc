// `dtlab-cli bench ...`: flags into each benchmark's options (remote/bench/), its report
// printed as it measures, and with --json its JSON line; the exit code.
#include "app/bench_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/sim/sim_bench.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/settings.h"
#include "remote/bench/bench_all.h"
#include "remote/bench/bench_allreduce.h"
#include "remote/bench/bench_checkpoint.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/bench_core.h"
#include "remote/bench/bench_data.h"
#include "remote/bench/bench_predict.h"
#include "remote/bench/bench_ps.h"
#include "remote/bench/bench_store.h"
#include "remote/bench/bench_strategies.h"
#include "remote/bench/bench_train.h"
#include "remote/bench/reference_process.h"

namespace dtlab::app {
namespace {

constexpr const char* kBenchUsage =
    R"(  bench core [--device cpu|cuda:N] [--precision fp32|tf32|bf16] [--threads N] [--batch B]
             [--in D] [--hidden H] [--layers L] [--classes C]
             [--model mlp|cnn|transformer] [--channels K] [--blocks N] [--tokens T]
             [--heads A] [--reps R] [--steps S] [--reference torch|none] [--json]
      Samples/s of full single-process training steps (forward, backward, SGD
      momentum) of an MLP D-HxL-C or, with --model cnn, of the cnn kind on shapes'
      1x28x28 images (N blocks of a 3x3 convolution, ReLU and 2x2 max pooling, K
      channels in the first, default 16 and 2; then L dense layers of H; --in and
      --classes are the images'), or, with --model transformer, of the transformer
      kind on the language dataset (T tokens a sample, default 64, a vocabulary of C,
      default 256; L blocks, default 2, of width H, default 128, A heads, default 4,
      GELU, causal; --batch default 32), median of R repetitions of S steps (0: about 0.3 s), wall clock,
      and the step's share of the sgemm rate (256x1024x1024, oneDNN) timed in turn
      with the repetitions. Without --threads, every thread count from 1 to the cores. --reference torch
      (the default when PyTorch is installed) runs the same steps in PyTorch on
      OpenBLAS with the fastest kernel for this CPU, repetitions interleaved with
      DTLab's, and prints both, the ratio, each side's GEMM rate and the step's
      share of the best sgemm rate measured. --device cuda:N: the steps on that GPU
      in --precision (default fp32), against the step's own GEMMs run alone on cuBLAS
      in the same precision, both timed here.
  bench train [--local-nodes N] [model flags as bench core] [--reps R]
              [--steps S] [--warmup W] [--reference torch|none] [--tls] [--json]
      sync_allreduce on N local dtlab-node daemons (1 thread each, default 2)
      against PyTorch DDP (gloo, N processes, 1 thread each): per repetition W
      untimed steps, then the wall clock of S whole steps; repetitions interleaved,
      medians, ratio. --tls: the daemons serve mutual TLS, against the same run in
      plain text (the cost of TLS).
  bench allreduce [--local-nodes N,...] [--bytes S,...] [--reps R] [--warmup W]
                  [--algorithm auto|own|gloo_allreduce|shm|...] [--transport auto|tcp]
                  [--json]
      All-reduce between N local processes (default 2,3,4) of S bytes (default
      64K,256K,1M,4M,16M,64M; K, M, G suffixes): DTLab's choice after its tuning
      pass against each of Gloo's algorithms built once on the same buffer, wall
      clock between barriers, repetitions interleaved; one table row per N and S:
      busbw of every side, the ratio to the best Gloo algorithm, a plain TCP stream
      of S bytes and DTLab's share of it, wrong elements. --algorithm forces
      DTLab's side to one algorithm (default auto: the tuned choice). --transport
      tcp keeps DTLab's groups off shared memory, as ranks on separate hosts are
      (default auto: these ranks share a host, so shared memory is a candidate).
  bench ps [--params N] [--workers W] [--steps S] [--reps R] [--warmup U] [--json]
      The parameter server's data plane: W worker processes (default 2) pull every
      block of an N-parameter model (default 1300000) from a server process and push
      a gradient to every block, as async_ps does: over the shard's stream (plain
      text) and over its gRPC service alone (as with TLS), against Gloo pairs
      moving the same bytes between the same processes; S steps per
      repetition, sides interleaved, the slowest worker's ms per step, medians,
      the ratio (the target: at most 1.5x Gloo's time); every value received is
      checked (the gradients are zeros, so the parameters never move).
  bench store [--points N] [--workers W] [--ingest-reps I] [--query-points N]
              [--buckets B] [--reps R] [--reference rows|none] [--dir D] [--json]
      Project store: ingest points/s through its appender into a fresh file (N
      points over W workers x the worker metrics, I times), and the latency of a
      downsampled query (R times), beside one row per point doing the same work
      (--reference rows, the default); repetitions interleaved, medians.
  bench checkpoint [--in D] [--hidden H,H,...] [--classes C] [--batch B] [--steps S]
                   [--every E] [--local-nodes N] [--strategy NAME] [--seed S] [--dir D]
                   [--json]
      What checkpoints of a large model cost (default MLP 64-7100-7100-10: 50.9 M
      parameters, 407 MB with SGD momentum) on N local nodes (default 2): the spec run
      as `dtlab-cli run` runs it without checkpoints and with one every E steps
      (default 10 of 40); rank 0's step time (medians), the stall of a step at a
      checkpoint against a step without (the target: at most 10%), the write beside the
      training, the stored size; then once more, SIGKILLed after a checkpoint drawn from
      the seed and resumed with `dtlab-cli resume`: every run of sync_allreduce must end
      with the uninterrupted run's parameters, bit for bit (exit 1 otherwise; other
      strategies' checksums are printed). --dir keeps the
      projects and logs (default: a scratch directory, removed).
  bench data [--kind K,...] [--samples N] [--device cuda:N] [--reps R] [--json]
      Samples/s with which each dataset kind (default sizes) is made: N training
      samples (default 20000) on the host, one thread, as a worker makes them, and with
      --device by that GPU's sample source into its memory (the same generator), both
      timed here, repetitions interleaved; medians and the ratio.
  bench all [--quick] [--reference torch|none] [--json]
      Every benchmark with a reference, one after another, each as its own command
      runs it (reports on stderr): core at the default shape and at 2-64x2-2 batch 64,
      train on 2 local nodes, allreduce, store; then one table on stdout of the
      headline figures, DTLab's and the reference's, their ratio, the target the
      issue holds it to and whether it is met, with the machine and its load
      average. --quick: fewer repetitions, sizes and rank counts (a few minutes).
  bench strategies [--specs DIR] [--only NAME,...] [--reps R] [--project P.dtlab] [--json]
      The example comparisons of resources/specs (hetero_2node, hetero_3node, hetero_4node,
      drift, modes_straggler, noniid, compression, image_classification, language_model), each one execution of R repetitions (default 3), as
      `dtlab-cli run SPEC --repeats R --quiet --project P` runs it; then each execution's
      statistics (medians with 95% intervals) and the claims (time to target
      speed_proportional vs equal and vs one node, its samples/s vs equal on three nodes,
      async_ps vs sync samples/s, compressed bytes per sample and time to target against
      uncompressed): ratios of medians with
      their paired interval and test, as `dtlab-cli compare` computes them.
  bench sim [--nodes N] [--steps S] [--json]
      The scale simulator's speed: N nodes (default 4096) x S global steps (10000) of
      sync_allreduce and of async_ps, each simulated once on one core, timed, with what it
      predicted; the target is under 60 s each.
  bench predict [--specs DIR] [--only NAME,...] [--reps R] [--project P.dtlab] [--netns]
      [--json]
      The scale simulator's cross-validation: every spec of resources/specs/predict (mlp,
      hetero, images) run with each variant on 1, 2, 3 and 4 local nodes, R times (default
      3; `dtlab-cli run --repeats R`, one execution per spec, into P, default
      predict.dtlab); calibrated on the 1- and 2-node runs only, the simulator predicts the
      time per step on 3 and 4 nodes; the table sets each beside the median of the measured
      ones, with the error and the bar (10%). --netns (root): each spec again with its
      nodes as daemons in network namespaces on a bridge.
)";

constexpr const char* kStrategiesUsage =
    R"(usage: dtlab-cli bench strategies [--specs DIR] [--only NAME,...]
                                  [--reps R] [--project P.dtlab] [--json]
  Runs the example comparisons (hetero_2node, hetero_3node, hetero_4node, drift,
  modes_straggler, noniid, compression, image_classification, language_model) from DIR (default: the source tree's resources/specs) with `dtlab-cli run SPEC
  --repeats R --quiet --project P` one after another (R default 3), then prints per
  comparison the statistics of its execution (markdown: medians with 95% bootstrap
  intervals over the repetitions, as `dtlab-cli compare` shows them) and the claims: a
  ratio claim is the ratio of the two variants' medians with its paired bootstrap interval
  and paired t-test, "met" when the median clears the claim. P defaults to strategies.dtlab
  in the working directory; the runs stay there for `dtlab-cli compare` and the GUI.
)";

// The MLP shape flags shared by `bench core` and `bench train`.
const std::set<std::string> kShapeFlags = {"--batch", "--in", "--hidden", "--layers", "--classes"};

void readShape(const Args& args, core::CoreBenchConfig& config) {
  config.batch = args.integer("--batch", 256, 1, 1 << 20);
  config.inputs = args.integer("--in", 256, 1, 1 << 20);
  config.hidden = args.integer("--hidden", 1024, 1, 1 << 16);
  config.layers = args.integer("--layers", 2, 0, 64);
  config.classes = args.integer("--classes", 10, 2, 1 << 16);
}

std::set<std::string> withShape(std::set<std::string> flags) {
  flags.insert(kShapeFlags.begin(), kShapeFlags.end());
  return flags;
}

bool wantsReference(const Args& args) {
  const std::string reference = args.value("--reference", "torch");
  if (reference != "torch" && reference != "none")
    throw UsageError("--reference: expected torch or none, got '" + reference + "'");
  return reference == "torch";
}

void noPositionals(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
}

// The --json line, when asked for.
void printJson(const Args& args, const nlohmann::json& json) {
  if (args.has("--json")) std::printf("%s\n", json.dump().c_str());
}

int benchTrain(const std::vector<std::string>& argv) {
  const Args args(argv,
                  withShape({"--local-nodes", "--reps", "--steps", "--warmup", "--reference"}),
                  {"--json", "--tls"});
  noPositionals(args);
  bench::TrainBenchOptions options;
  readShape(args, options.shape);
  options.nodes = static_cast<int>(args.integer("--local-nodes", 2, 1, 64));
  options.repetitions = static_cast<int>(args.integer("--reps", 5, 1, 100));
  options.steps = args.integer("--steps", 50, 1, 1000000);
  options.warmup = args.integer("--warmup", 10, 1, 1000000);
  options.reference = wantsReference(args);
  options.tls = args.has("--tls");
  if (options.tls && args.has("--reference"))
    throw UsageError("--tls compares with the same run in plain text: drop --reference");
  if (options.shape.batch < options.nodes)
    throw UsageError("--batch must be at least --local-nodes");
  if (options.shape.batch % options.nodes != 0)
    throw UsageError("--batch must be a multiple of --local-nodes (PyTorch DDP splits it evenly)");
  printJson(args, bench::runTrainBench(options, stdout).json);
  return 0;
}

int benchCore(const std::vector<std::string>& argv) {
  const Args args(
      argv,
      withShape({"--device", "--precision", "--threads", "--reps", "--steps", "--reference",
                 "--model", "--channels", "--blocks", "--tokens", "--heads"}),
      {"--json"});
  noPositionals(args);
  bench::CoreBenchOptions options;
  core::CoreBenchConfig& config = options.config;
  readShape(args, config);
  config.model = args.value("--model", "mlp");
  if (config.model == "cnn") {
    if (args.has("--in") || args.has("--classes"))
      throw UsageError(
          "--in and --classes: the cnn's inputs and classes are shapes' (1x28x28, 10)");
    config.inputs = 28 * 28;
    config.classes = 10;
    config.channels = args.integer("--channels", 16, 1, 1024);
    config.blocks = args.integer("--blocks", 2, 1, 4);
    if (!args.has("--hidden")) config.hidden = 128;
    if (!args.has("--layers")) config.layers = 1;
    if (args.value("--device", "cpu") != "cpu")
      throw UsageError("--model cnn: the CUDA backend has no convolutions yet; it runs on the CPU");
  } else if (config.model == "transformer") {
    if (args.has("--in")) throw UsageError("--in: the transformer's inputs are --tokens token ids");
    config.tokens = args.integer("--tokens", 64, 1, 4096);
    config.heads = args.integer("--heads", 4, 1, 128);
    if (!args.has("--hidden")) config.hidden = 128;
    if (!args.has("--classes")) config.classes = 256;
    if (!args.has("--batch")) config.batch = 32;
    if (config.layers < 1) throw UsageError("--layers: the transformer needs at least one block");
    if (config.hidden % config.heads != 0)
      throw UsageError("--heads must divide --hidden, the transformer's width");
    if (args.value("--device", "cpu") != "cpu")
      throw UsageError(
          "--model transformer: the CUDA backend has no attention yet; it runs on the CPU");
  } else if (config.model != "mlp") {
    throw UsageError("--model: expected mlp, cnn or transformer, got '" + config.model + "'");
  }
  if (config.model != "cnn" && (args.has("--channels") || args.has("--blocks")))
    throw UsageError("--channels and --blocks apply to --model cnn");
  if (config.model != "transformer" && (args.has("--tokens") || args.has("--heads")))
    throw UsageError("--tokens and --heads apply to --model transformer");
  config.repetitions = static_cast<int>(args.integer("--reps", 7, 1, 1000));
  options.fixedSteps = args.integer("--steps", 0, 0, 1000000);
  config.device = args.value("--device", "cpu");
  if (config.device != "cpu") {
    if (args.has("--threads") || args.has("--reference"))
      throw UsageError("--threads and --reference apply to --device cpu only");
    const std::string precision = args.value("--precision", "fp32");
    bool known = false;
    for (const core::Precision p :
         {core::Precision::kFp32, core::Precision::kTf32, core::Precision::kBf16})
      if (precision == core::toString(p)) {
        config.precision = p;
        known = true;
      }
    if (!known)
      throw UsageError("--precision: expected fp32, tf32 or bf16, got '" + precision + "'");
  } else {
    if (args.has("--precision") && args.value("--precision", "") != "fp32")
      throw UsageError(
          "--precision " + args.value("--precision", "") +
          ": the CPU backend computes in fp32 only (tf32 and bf16 need --device cuda:N)");
    options.reference = wantsReference(args);
    if (args.has("--threads"))
      options.threadCounts.push_back(static_cast<int>(args.integer("--threads", 1, 1, 256)));
  }
  printJson(args, bench::runCoreBench(options, stdout).json);
  return 0;
}

core::AllReduceAlgorithm algorithmFlag(const Args& args) {
  try {
    return core::parseAllReduceAlgorithm(args.value("--algorithm", "auto"));
  } catch (const Error& e) {
    throw UsageError(std::string("--algorithm: ") + e.what());
  }
}

// --transport auto|tcp: whether DTLab's groups may use shared memory (ranks on one host).
bool sharedMemoryFlag(const Args& args) {
  const std::string transport = args.value("--transport", "auto");
  if (transport != "auto" && transport != "tcp")
    throw UsageError("--transport " + transport +
                     ": expected auto (shared memory where the ranks share a host) or tcp");
  return transport == "auto";
}

int benchAllReduce(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--local-nodes", "--bytes", "--reps", "--warmup", "--algorithm", "--transport"},
                  {"--json"});
  noPositionals(args);
  bench::AllReduceBenchOptions options;
  options.algorithm = algorithmFlag(args);
  options.sharedMemory = sharedMemoryFlag(args);
  options.nodeCounts.clear();
  for (const int64_t n : args.integers("--local-nodes", {2, 3, 4}, 2, 64))
    options.nodeCounts.push_back(static_cast<int>(n));
  options.sizes = args.integers("--bytes", options.sizes, 4, int64_t{1} << 31, true);
  options.repetitions = static_cast<int>(args.integer("--reps", 10, 1, 100000));
  options.warmup = static_cast<int>(args.integer("--warmup", 2, 0, 1000));
  const bench::AllReduceBenchResult r = bench::runAllReduceBench(options, stdout);
  printJson(args, r.json);
  if (r.wrong != 0) {
    std::fprintf(stderr, "bench allreduce: %lld wrong elements (see the wrong column)\n",
                 static_cast<long long>(r.wrong));
    return 1;
  }
  return 0;
}

// Hidden: one rank of `bench allreduce`, started by it.
int benchAllReduceRank(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--rank", "--world", "--store", "--bytes", "--reps", "--warmup", "--algorithm",
                   "--transport"},
                  {});
  bench::AllReduceRankOptions options;
  options.algorithm = algorithmFlag(args);
  options.sharedMemory = sharedMemoryFlag(args);
  options.rank = static_cast<int>(args.integer("--rank", 0, 0, 1023));
  options.world = static_cast<int>(args.integer("--world", 1, 1, 1024));
  options.storeDir = args.value("--store", "/tmp");
  core::AllReduceBenchConfig& config = options.config;
  config.bytes = args.integer("--bytes", config.bytes, 4, int64_t{1} << 31);
  config.repetitions = static_cast<int>(args.integer("--reps", config.repetitions, 1, 100000));
  config.warmup = static_cast<int>(args.integer("--warmup", config.warmup, 0, 1000));
  bench::runAllReduceRank(options, stdout);
  return 0;
}

// Hidden: one end of `bench allreduce`'s TCP stream, started by it.
int benchTcpRank(const std::vector<std::string>& argv) {
  const Args args(argv, {"--role", "--port-file", "--bytes", "--iters"}, {});
  bench::TcpRankOptions options;
  const std::string role = args.value("--role", "");
  options.portFile = args.value("--port-file", "");
  options.bytes = args.integer("--bytes", 16 << 20, 1, int64_t{1} << 32);
  options.iterations = static_cast<int>(args.integer("--iters", 20, 1, 100000));
  if (role != "send" && role != "recv") throw UsageError("--role: expected send or recv");
  options.receiver = role == "recv";
  bench::runTcpRank(options, stdout);
  return 0;
}

int benchStore(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--points", "--workers", "--ingest-reps", "--query-points", "--buckets",
                   "--reps", "--reference", "--dir"},
                  {"--json"});
  noPositionals(args);
  core::StoreBenchConfig config;
  config.ingestPoints = args.integer("--points", config.ingestPoints, 1000, int64_t{1} << 34);
  config.workers = static_cast<int>(args.integer("--workers", config.workers, 1, 4096));
  config.ingestRepetitions =
      static_cast<int>(args.integer("--ingest-reps", config.ingestRepetitions, 1, 100));
  config.queryPoints = args.integer("--query-points", config.queryPoints, 1000, int64_t{1} << 34);
  config.buckets = static_cast<int>(args.integer("--buckets", config.buckets, 1, 1 << 24));
  config.repetitions = static_cast<int>(args.integer("--reps", config.repetitions, 1, 1000));
  config.directory = args.value("--dir", "");
  const std::string reference = args.value("--reference", "rows");
  if (reference != "rows" && reference != "none")
    throw UsageError("--reference: expected rows or none, got '" + reference + "'");
  config.reference = reference == "rows";
  const bench::StoreBenchOutcome r = bench::runStoreBench(config, stdout);
  printJson(args, r.json);
  if (r.wrong != 0) {
    std::fprintf(stderr, "bench store: wrong results (see the wrong columns)\n");
    return 1;
  }
  return 0;
}

int benchCheckpoint(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--in", "--hidden", "--classes", "--batch", "--steps", "--every",
                   "--local-nodes", "--strategy", "--seed", "--dir"},
                  {"--json"});
  noPositionals(args);
  bench::CheckpointBenchConfig config;
  config.inputs = args.integer("--in", config.inputs, 1, 65536);
  config.hidden = args.integers("--hidden", config.hidden, 1, 65536);
  config.classes = args.integer("--classes", config.classes, 2, 65536);
  config.batch = args.integer("--batch", config.batch, 1, 1 << 20);
  config.steps = args.integer("--steps", config.steps, 2, 1'000'000);
  config.every = args.integer("--every", config.every, 1, config.steps / 2);
  config.localNodes = static_cast<int>(args.integer("--local-nodes", config.localNodes, 1, 64));
  config.strategy = args.value("--strategy", config.strategy);
  config.seed = static_cast<uint64_t>(args.integer("--seed", 0, 0, INT64_MAX));
  config.directory = args.value("--dir", "");
  const bench::CheckpointBenchOutcome r = bench::runCheckpointBench(config, stdout);
  printJson(args, r.json);
  if (r.mustMatch && !r.sameParameters) {
    std::fprintf(stderr, "bench checkpoint: a run ended with other parameters (see the table)\n");
    return 1;
  }
  return 0;
}

// The kinds --kind names (comma-separated), or all of them.
std::vector<std::string> chosenKinds(const Args& args) {
  const std::vector<std::string> all = bench::dataBenchKinds();
  if (!args.has("--kind")) return all;
  const std::vector<std::string> kinds = args.list("--kind");
  for (const std::string& name : kinds)
    if (std::find(all.begin(), all.end(), name) == all.end())
      throw UsageError("--kind: unknown dataset kind '" + name + "' (expected " +
                       core::listText(all) + ")");
  return kinds;
}

int benchData(const std::vector<std::string>& argv) {
  const Args args(argv, {"--kind", "--samples", "--device", "--reps"}, {"--json"});
  noPositionals(args);
  bench::DataBenchOptions options;
  options.samples = args.integer("--samples", 20000, 1, 100000000);
  options.repetitions = static_cast<int>(args.integer("--reps", 5, 1, 1000));
  options.device = args.value("--device", "cpu");
  options.kinds = chosenKinds(args);
  printJson(args, bench::runDataBench(options, stdout).json);
  return 0;
}

int benchStrategies(const std::vector<std::string>& argv) {
  if (std::any_of(argv.begin(), argv.end(), [](const std::string& a) { return a == "--help"; })) {
    std::printf("%s", kStrategiesUsage);
    return 0;
  }
  const Args args(argv, {"--specs", "--only", "--project", "--reps"}, {"--json"});
  bench::StrategiesBenchOptions options;
  options.repetitions = static_cast<int>(args.integer("--reps", 3, 1, 20));
  if (!args.positionals().empty())
    throw UsageError("bench strategies: unexpected '" + args.positionals()[0] + "'");
  options.specsDir = args.value("--specs", bench::resourcesDir("specs"));
  options.project = args.value("--project", "strategies.dtlab");
  const std::vector<std::string> known = bench::strategyComparisons();
  for (const std::string& name : args.list("--only")) {
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw UsageError("--only: unknown comparison '" + name + "' (expected " +
                       core::listText(known) + ")");
    options.only.push_back(name);
  }
  const bench::StrategiesBenchResult result = bench::runStrategiesBench(options);
  if (args.has("--json"))
    std::cout << bench::toJson(result).dump() << std::endl;
  else
    bench::writeReport(result, std::cout);
  return 0;
}

void psFlags(const Args& args, bench::PsBenchOptions& o) {
  o.params = args.integer("--params", o.params, 1, int64_t{1} << 28);
  o.workers = static_cast<int>(args.integer("--workers", o.workers, 1, 64));
  o.steps = static_cast<int>(args.integer("--steps", o.steps, 1, 100000));
  o.repetitions = static_cast<int>(args.integer("--reps", o.repetitions, 1, 100000));
  o.warmup = static_cast<int>(args.integer("--warmup", o.warmup, 0, 1000));
}

int benchPs(const std::vector<std::string>& argv) {
  const Args args(argv, {"--params", "--workers", "--steps", "--reps", "--warmup"}, {"--json"});
  noPositionals(args);
  bench::PsBenchOptions options;
  psFlags(args, options);
  const bench::PsBenchResult r = bench::runPsBench(options, stdout);
  printJson(args, r.json);
  if (r.wrong != 0) {
    std::fprintf(stderr, "bench ps: %lld values received wrong\n", static_cast<long long>(r.wrong));
    return 1;
  }
  return 0;
}

// Hidden: one process of `bench ps`, started by it.
int benchPsRank(const std::vector<std::string>& argv) {
  const Args args(
      argv, {"--role", "--rank", "--dir", "--params", "--workers", "--steps", "--reps", "--warmup"},
      {});
  bench::PsRankOptions options;
  options.role = args.value("--role", "");
  options.rank = static_cast<int>(args.integer("--rank", 0, 0, 1023));
  options.dir = args.value("--dir", "");
  psFlags(args, options.bench);
  bench::runPsRank(options, stdout);
  return 0;
}

int benchAll(const std::vector<std::string>& argv) {
  const Args args(argv, {"--reference"}, {"--quick", "--json"});
  noPositionals(args);
  bench::AllBenchOptions options;
  options.quick = args.has("--quick");
  options.reference = wantsReference(args);
  // Each benchmark's own report goes to stderr as it measures; the table to stdout.
  const bench::AllBenchResult result = bench::runAllBench(options, stdout, stderr);
  printJson(args, result.json);
  return result.json.value("wrong", int64_t{0}) == 0 ? 0 : 1;
}

bool wantsHelp(const std::vector<std::string>& argv) {
  return std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
    return a == "--help" || a == "-h" || a == "help";
  });
}

int benchSim(const std::vector<std::string>& argv) {
  const Args args(argv, {"--nodes", "--steps"}, {"--json"});
  noPositionals(args);
  core::sim::SimBenchOptions options;
  options.nodes = static_cast<int>(args.integer("--nodes", 4096, 1, 1 << 20));
  options.steps = args.integer("--steps", 10000, 1, int64_t{1} << 40);
  const nlohmann::json result = core::sim::runSimBench(options, stdout);
  printJson(args, result);
  return 0;
}

int benchPredict(const std::vector<std::string>& argv) {
  const Args args(argv, {"--specs", "--only", "--project", "--reps"}, {"--json", "--netns"});
  noPositionals(args);
  bench::PredictBenchOptions options;
  options.reps = static_cast<int>(args.integer("--reps", options.reps, 1, 100));
  options.netns = args.has("--netns");
  options.specsDir = args.value("--specs", bench::resourcesDir("specs") + "/predict");
  options.project = std::filesystem::absolute(args.value("--project", "predict.dtlab")).string();
  options.only = args.list("--only");
  const bench::PredictBenchResult result = bench::runPredictBench(options);
  if (args.has("--json"))
    std::cout << bench::toJson(result).dump() << std::endl;
  else
    bench::writeReport(result, std::cout);
  return 0;
}

int dispatch(const std::string& what, const std::vector<std::string>& rest) {
  if (what == "core") return benchCore(rest);
  if (what == "train") return benchTrain(rest);
  if (what == "allreduce") return benchAllReduce(rest);
  if (what == "allreduce-rank") return benchAllReduceRank(rest);
  if (what == "tcp-rank") return benchTcpRank(rest);
  if (what == "ps") return benchPs(rest);
  if (what == "ps-rank") return benchPsRank(rest);
  if (what == "store") return benchStore(rest);
  if (what == "data") return benchData(rest);
  if (what == "checkpoint") return benchCheckpoint(rest);
  if (what == "strategies") return benchStrategies(rest);
  if (what == "all") return benchAll(rest);
  if (what == "sim") return benchSim(rest);
  if (what == "predict") return benchPredict(rest);
  throw UsageError("bench: unknown benchmark '" + what +
                   "' (expected core, train, allreduce, ps, store, data, checkpoint, "
                   "strategies, sim, predict or all)");
}

}  // namespace

const char* benchUsage() {
  return kBenchUsage;
}

int benchCommand(const std::vector<std::string>& argv) {
  if (argv.empty() || wantsHelp(argv)) {
    std::printf("usage: dtlab-cli bench <what> [options]\n\n%s", kBenchUsage);
    return argv.empty() ? 2 : 0;
  }
  try {
    return dispatch(argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()));
  } catch (const bench::OptionError& e) {
    throw UsageError(e.what());  // a flag the machine cannot honour: a usage error
  }
}

}  // namespace dtlab::app
