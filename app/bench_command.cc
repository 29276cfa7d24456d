#include "app/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/bench_allreduce.h"
#include "app/project_command.h"
#include "app/reference_process.h"
#include "core/backend/cpu_backend.h"
#include "core/metrics/metrics.h"
#include "core/train/core_bench.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::app {
namespace {

constexpr const char* kBenchUsage =
    R"(  bench core [--device cpu|cuda:N] [--precision fp32|tf32|bf16] [--threads N] [--batch B]
             [--in D] [--hidden H] [--layers L] [--classes C] [--reps R] [--steps S]
             [--reference torch|none] [--json]
      Samples/s of full single-process training steps (forward, backward, SGD
      momentum), median of R repetitions of S steps (0: about 0.3 s), wall clock.
      Without --threads, every thread count from 1 to the cores. --reference torch
      (the default when PyTorch is installed) runs the same steps in PyTorch on
      OpenBLAS with the fastest kernel for this CPU, repetitions interleaved with
      DTLab's, and prints both, the ratio, each side's GEMM rate and the step's
      share of the best sgemm rate measured. --device cuda:N: the steps on that GPU
      in --precision (default fp32), against the step's own GEMMs run alone on cuBLAS
      in the same precision, both timed here.
  bench train [--local-nodes N] [model flags as bench core] [--reps R]
              [--steps S] [--warmup W] [--reference torch|none] [--json]
      sync_allreduce on N local dtlab-node daemons (1 thread each, default 2)
      against PyTorch DDP (gloo, N processes, 1 thread each): per repetition W
      untimed steps, then the wall clock of S whole steps; repetitions interleaved,
      medians, ratio.
  bench allreduce [--local-nodes N] [--bytes S] [--reps R] [--warmup W] [--json]
      All-reduce of S bytes between N local processes (default 2): DTLab's choice
      against each of Gloo's algorithms built once on the same buffer, wall clock
      between barriers, repetitions interleaved; median, algbw, busbw, wrong
      elements, the ratio to the best Gloo algorithm, and a plain TCP stream.
  bench store [--points N] [--workers W] [--ingest-reps I] [--query-points N]
              [--buckets B] [--reps R] [--reference rows|none] [--dir D] [--json]
      Project store: ingest points/s through its appender into a fresh file (N
      points over W workers x the worker metrics, I times), and the latency of a
      downsampled query (R times), beside one row per point doing the same work
      (--reference rows, the default); repetitions interleaved, medians.
  bench data [--kind K,...] [--samples N] [--device cuda:N] [--reps R] [--json]
      Samples/s with which each dataset kind (default sizes) is made: N training
      samples (default 20000) on the host, one thread, as a worker makes them, and with
      --device by that GPU's sample source into its memory (the same generator), both
      timed here, repetitions interleaved; medians and the ratio.
  bench strategies [--specs DIR] [--only NAME,...] [--reps R] [--project P.dtlab] [--json]
      The example comparisons of resources/specs (hetero_2node, hetero_4node, drift,
      modes_straggler, noniid), each run R times (default 3) as `dtlab-cli run SPEC
      --quiet --project P` runs it; then the README's results table and the claims (time
      to target speed_proportional vs equal, async_ps vs sync samples/s), each the median
      of its R figures.
)";

using Clock = std::chrono::steady_clock;

// The idle threads of the side that just ran may still spin for a while (OpenMP pools,
// OpenBLAS's workers); the next side's repetition starts after they have gone to sleep.
void settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

// The MLP shape flags shared by `bench core` and `bench train`.
const std::set<std::string> kShapeFlags = {"--batch", "--in", "--hidden", "--layers", "--classes"};

std::vector<std::string> shapeArgs(const core::CoreBenchConfig& c) {
  return {"--batch",   std::to_string(c.batch),  "--in",     std::to_string(c.inputs),
          "--hidden",  std::to_string(c.hidden), "--layers", std::to_string(c.layers),
          "--classes", std::to_string(c.classes)};
}

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

std::string shapeText(const core::CoreBenchConfig& c) {
  return "MLP " + std::to_string(c.inputs) + "-" + std::to_string(c.hidden) + "x" +
         std::to_string(c.layers) + "-" + std::to_string(c.classes);
}

// Rank 0's end-of-step wall clock, by step. Every step of sync_allreduce ends on an
// all-reduce that waits for every rank, so two of these timestamps bracket whole steps the
// way barriers do, with everything a step does in between (batch loading, metric emission).
class StepClock : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker == 0) endMs[m.step] = m.wallMs;
  }
  std::map<int64_t, double> endMs;
};

int benchTrain(const std::vector<std::string>& argv) {
  const Args args(argv,
                  withShape({"--local-nodes", "--reps", "--steps", "--warmup", "--reference"}),
                  {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  core::CoreBenchConfig shape;
  readShape(args, shape);
  const int nodes = static_cast<int>(args.integer("--local-nodes", 2, 1, 64));
  const int reps = static_cast<int>(args.integer("--reps", 5, 1, 100));
  const int64_t steps = args.integer("--steps", 50, 1, 1000000);
  const int64_t warmup = args.integer("--warmup", 10, 1, 1000000);
  const bool reference = wantsReference(args);
  if (shape.batch < nodes) throw UsageError("--batch must be at least --local-nodes");
  if (shape.batch % nodes != 0)
    throw UsageError("--batch must be a multiple of --local-nodes (PyTorch DDP splits it evenly)");

  core::ExperimentSpec spec;
  spec.name = "bench_train";
  spec.dataset.features = shape.inputs;
  spec.dataset.classes = shape.classes;
  spec.dataset.trainSize = shape.batch * 16;
  spec.dataset.testSize = shape.classes;
  spec.model.hidden.assign(static_cast<std::size_t>(shape.layers), shape.hidden);
  spec.optimizer.lr = 0.01f;
  spec.optimizer.momentum = 0.9f;
  spec.training.batchSize = shape.batch;
  spec.training.epochs = 0;
  spec.training.maxSteps = warmup + steps;
  spec.training.evalInterval = int64_t{1} << 40;  // evaluate once, after the last step
  spec.cluster.localNodes = nodes;

  std::printf(
      "bench train: sync_allreduce on %d local nodes (1 thread each), %s, global batch %lld;\n"
      "  per repetition %lld untimed steps, then the wall clock of %lld whole steps; %d "
      "repetitions, interleaved with the reference's\n",
      nodes, shapeText(shape).c_str(), static_cast<long long>(shape.batch),
      static_cast<long long>(warmup), static_cast<long long>(steps), reps);
  std::printf("  %s\n", machineDescription().c_str());
  std::fflush(stdout);

  std::optional<TorchReference> torch;
  std::unique_ptr<ReferenceProcess> ddp;
  nlohmann::json ddpInfo;
  if (reference) {
    torch = findTorchReference(1);
    if (torch) {
      printBlasChoice(*torch);
      std::vector<std::string> command = {torch->python,
                                          torch->scripts + "/torch_ddp.py",
                                          "--serve",
                                          "--world",
                                          std::to_string(nodes),
                                          "--threads",
                                          "1",
                                          "--warmup",
                                          std::to_string(warmup)};
      for (const std::string& a : shapeArgs(shape)) command.push_back(a);
      ddp = std::make_unique<ReferenceProcess>(command, torch->environment(1));
      ddpInfo = ddp->readJson();
      std::printf("  reference: %s, %d processes, 1 thread each; its sgemm: %.1f GFLOP/s (%s)\n",
                  ddpInfo.at("impl").get<std::string>().c_str(), nodes,
                  ddpInfo.at("sgemm_gflops").get<double>(),
                  ddpInfo.value("core", nlohmann::json()).is_string()
                      ? ("OpenBLAS " + ddpInfo["core"].get<std::string>()).c_str()
                      : "not OpenBLAS");
    }
  }

  remote::LocalCluster cluster(remote::defaultNodeBinary(), std::vector<remote::LocalNodeOptions>(
                                                                static_cast<std::size_t>(nodes)));
  remote::Coordinator coordinator(cluster.addresses(), {});
  coordinator.connect();
  const double samples = static_cast<double>(steps * shape.batch);
  auto runDtlab = [&]() {
    StepClock clock;
    const core::RunSummary summary = coordinator.run(spec, 0, &clock);
    if (summary.status == core::RunStatus::kFailed)
      throw std::runtime_error("benchmark run failed: " + summary.error);
    const auto first = clock.endMs.find(warmup);
    const auto last = clock.endMs.find(warmup + steps);
    if (first == clock.endMs.end() || last == clock.endMs.end())
      throw std::runtime_error(
          "rank 0 reported no end time for step " +
          std::to_string(first == clock.endMs.end() ? warmup : warmup + steps));
    return samples * 1000.0 / (last->second - first->second);
  };
  auto runDdp = [&]() {
    const nlohmann::json r = ddp->request("steps " + std::to_string(steps));
    return samples / r.at("seconds").get<double>();
  };

  std::vector<double> ours, theirs;
  for (int rep = 0; rep < reps; ++rep) {
    // Alternate which side goes first, so neither always follows the other.
    for (int k = 0; k < 2; ++k) {
      const bool dtlabTurn = (rep + k) % 2 == 0;
      if (!dtlabTurn && !ddp) continue;
      settle();
      (dtlabTurn ? ours : theirs).push_back(dtlabTurn ? runDtlab() : runDdp());
    }
    std::printf("  repetition %d: dtlab %10.0f samples/s", rep + 1, ours.back());
    if (ddp) std::printf("   pytorch DDP %10.0f samples/s", theirs.back());
    std::printf("\n");
    std::fflush(stdout);
  }
  const double rate = core::median(ours);
  std::printf("  dtlab       %d nodes: %10.0f samples/s (median of %d)\n", nodes, rate, reps);
  nlohmann::json out = {{"bench", "train"},
                        {"nodes", nodes},
                        {"steps", steps},
                        {"warmup_steps", warmup},
                        {"repetitions", reps},
                        {"samples_per_s", rate},
                        {"repetition_samples_per_s", ours}};
  if (ddp) {
    const double refRate = core::median(theirs);
    std::printf("  pytorch DDP %d procs: %10.0f samples/s (median of %d)\n", nodes, refRate, reps);
    std::printf("  ratio dtlab / pytorch DDP: %.2fx\n", rate / refRate);
    out["reference"] = {{"impl", ddpInfo.at("impl")},
                        {"samples_per_s", refRate},
                        {"repetition_samples_per_s", theirs},
                        {"blas", ddpInfo.value("blas", nlohmann::json())},
                        {"blas_core", ddpInfo.value("core", nlohmann::json())},
                        {"sgemm_gflops", ddpInfo.at("sgemm_gflops")}};
    out["ratio"] = rate / refRate;
  } else {
    out["reference"] = nullptr;
  }
  if (args.has("--json")) std::printf("%s\n", out.dump().c_str());
  return 0;
}

// bench core on a GPU: the step against the same step's GEMMs alone on the device's library
// (cuBLAS), both timed here; no CPU reference.
int benchCoreOnDevice(const Args& args, core::CoreBenchConfig config, int64_t fixedSteps) {
  if (args.has("--threads") || args.has("--reference"))
    throw UsageError("--threads and --reference apply to --device cpu only");
  config.threads = 1;
  const std::string precision = args.value("--precision", "fp32");
  bool known = false;
  for (const core::Precision p :
       {core::Precision::kFp32, core::Precision::kTf32, core::Precision::kBf16})
    if (precision == core::toString(p)) {
      config.precision = p;
      known = true;
    }
  if (!known) throw UsageError("--precision: expected fp32, tf32 or bf16, got '" + precision + "'");
  core::CoreStepBench bench(config);
  const int64_t steps = fixedSteps > 0 ? fixedSteps : bench.stepsFor(config.secondsPerRepetition);
  std::vector<double> rates;
  for (int rep = 0; rep < config.repetitions; ++rep)
    rates.push_back(static_cast<double>(steps * config.batch) / bench.timeSteps(steps));
  const double rate = core::median(rates);
  const double stepMs = 1000.0 * static_cast<double>(config.batch) / rate;
  const double gflops = rate / static_cast<double>(config.batch) * bench.flopsPerStep() * 1e-9;
  const core::StepGemmsResult gemms = core::benchStepGemms(config);
  std::printf(
      "bench core on %s: %s, batch %lld, cross-entropy, SGD momentum, %s; %d repetitions of "
      "%lld steps, wall clock\n",
      config.device.c_str(), shapeText(config).c_str(), static_cast<long long>(config.batch),
      core::toString(config.precision), config.repetitions, static_cast<long long>(steps));
  std::printf("  training step:     %10.0f samples/s  %8.3f ms  %8.1f GFLOP/s\n", rate, stepMs,
              gflops);
  std::printf("  its %2d GEMMs alone:                      %8.3f ms  %8.1f GFLOP/s\n",
              gemms.gemmsPerStep, gemms.ms, gemms.gflops);
  std::printf("  step / GEMMs alone: %.0f%% of the GEMM throughput on the same shapes\n",
              100.0 * gflops / gemms.gflops);
  if (args.has("--json")) {
    const nlohmann::json out = {{"bench", "core"},
                                {"device", config.device},
                                {"batch", config.batch},
                                {"inputs", config.inputs},
                                {"hidden", config.hidden},
                                {"layers", config.layers},
                                {"classes", config.classes},
                                {"precision", core::toString(config.precision)},
                                {"steps", steps},
                                {"samples_per_s", rate},
                                {"step_ms", stepMs},
                                {"gflops", gflops},
                                {"repetition_samples_per_s", rates},
                                {"gemms_alone_ms", gemms.ms},
                                {"gemms_alone_gflops", gemms.gflops},
                                {"gemm_fraction", gflops / gemms.gflops}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

int benchCore(const std::vector<std::string>& argv) {
  const Args args(
      argv, withShape({"--device", "--precision", "--threads", "--reps", "--steps", "--reference"}),
      {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  core::CoreBenchConfig config;
  readShape(args, config);
  config.repetitions = static_cast<int>(args.integer("--reps", 7, 1, 1000));
  const int64_t fixedSteps = args.integer("--steps", 0, 0, 1000000);
  config.device = args.value("--device", "cpu");
  if (config.device != "cpu") return benchCoreOnDevice(args, config, fixedSteps);
  if (args.has("--precision") && args.value("--precision", "") != "fp32")
    throw UsageError(
        "--precision " + args.value("--precision", "") +
        ": the CPU backend computes in fp32 only (tf32 and bf16 need --device cuda:N)");
  const bool reference = wantsReference(args);
  const int cores = core::availableCores();
  std::vector<int> threadCounts;
  if (args.has("--threads")) {
    threadCounts.push_back(static_cast<int>(args.integer("--threads", 1, 1, 256)));
  } else {
    for (int t = 1; t <= cores; ++t) threadCounts.push_back(t);
  }
  // blas_probe.py chooses the OpenBLAS kernel by its rate at the most threads measured.
  const int gemmThreads = threadCounts.back();

  std::printf(
      "bench core: %s, batch %lld, cross-entropy, SGD momentum; per thread count %d "
      "repetitions of the same number of whole steps on each side, wall clock, interleaved\n",
      shapeText(config).c_str(), static_cast<long long>(config.batch), config.repetitions);
  std::printf("  %s\n", machineDescription().c_str());
  std::fflush(stdout);
  std::optional<TorchReference> torch;
  if (reference) {
    torch = findTorchReference(gemmThreads);
    if (torch) printBlasChoice(*torch);
  }

  struct Best {
    int threads = 0;
    double samplesPerS = 0.0;
    double gflops = 0.0;
  };
  Best ours, theirs;
  // The machine's GEMM rate: the best sgemm measured in this run at the step's largest
  // shape, by DTLab's library (oneDNN) and, with the reference, OpenBLAS (through torch.mm
  // in the reference process and in blas_probe.py), at any thread count.
  double bestSgemm = 0.0;
  std::string bestSgemmBy;
  auto sgemmSeen = [&](double gflops, const std::string& by) {
    if (gflops > bestSgemm) {
      bestSgemm = gflops;
      bestSgemmBy = by;
    }
  };
  if (torch && torch->blas.value("gflops", 0.0) > 0.0)
    sgemmSeen(torch->blas["gflops"].get<double>(),
              "OpenBLAS, " + std::to_string(gemmThreads) + " threads, blas_probe");
  nlohmann::json rows = nlohmann::json::array();
  for (int threads : threadCounts) {
    config.threads = threads;
    core::CoreStepBench bench(config);
    const double flopsPerStep = bench.flopsPerStep();
    const int64_t steps = fixedSteps > 0 ? fixedSteps : bench.stepsFor(config.secondsPerRepetition);
    std::unique_ptr<ReferenceProcess> ref;
    nlohmann::json refInfo;
    if (torch) {
      std::vector<std::string> command = {torch->python, torch->scripts + "/torch_mlp.py",
                                          "--serve", "--threads", std::to_string(threads)};
      for (const std::string& a : shapeArgs(config)) command.push_back(a);
      ref = std::make_unique<ReferenceProcess>(command, torch->environment(threads));
      refInfo = ref->readJson();
    }
    std::vector<double> mine, others;
    for (int rep = 0; rep < config.repetitions; ++rep) {
      for (int k = 0; k < 2; ++k) {
        const bool dtlabTurn = (rep + k) % 2 == 0;
        if (!dtlabTurn && !ref) continue;
        settle();
        const double seconds =
            dtlabTurn ? bench.timeSteps(steps)
                      : ref->request("steps " + std::to_string(steps)).at("seconds").get<double>();
        (dtlabTurn ? mine : others).push_back(static_cast<double>(steps * config.batch) / seconds);
      }
    }
    ref.reset();  // its threads must not compete with the GEMM measurement below
    settle();
    const double onednn = core::benchGemmGflops(threads, 256, 1024, 1024);
    const double openblas =
        ref || refInfo.is_null() ? 0.0 : refInfo.at("sgemm_gflops").get<double>();
    const std::string suffix = threads == 1 ? " thread" : " threads";
    sgemmSeen(onednn, "oneDNN, " + std::to_string(threads) + suffix);
    sgemmSeen(openblas, "OpenBLAS, " + std::to_string(threads) + suffix + ", torch.mm");
    const double rowSgemm = std::max(onednn, openblas);

    const double rate = core::median(mine);
    const double gflops = rate / static_cast<double>(config.batch) * flopsPerStep * 1e-9;
    std::printf("  threads %d, %lld steps a repetition:\n", threads, static_cast<long long>(steps));
    std::printf("    dtlab    %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n",
                rate, 1000.0 * static_cast<double>(config.batch) / rate, gflops,
                100.0 * gflops / rowSgemm);
    nlohmann::json row = {{"threads", threads},
                          {"steps", steps},
                          {"samples_per_s", rate},
                          {"gflops", gflops},
                          {"sgemm_onednn_gflops", onednn},
                          {"sgemm_fraction", gflops / rowSgemm},
                          {"repetition_samples_per_s", mine}};
    if (rate > ours.samplesPerS) ours = {threads, rate, gflops};
    if (!others.empty()) {
      const double refRate = core::median(others);
      const double refGflops = refRate / static_cast<double>(config.batch) * flopsPerStep * 1e-9;
      std::printf(
          "    pytorch  %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n",
          refRate, 1000.0 * static_cast<double>(config.batch) / refRate, refGflops,
          100.0 * refGflops / rowSgemm);
      row["reference"] = {{"impl", refInfo.at("impl")},
                          {"samples_per_s", refRate},
                          {"gflops", refGflops},
                          {"sgemm_gflops", openblas},
                          {"sgemm_fraction", refGflops / rowSgemm},
                          {"repetition_samples_per_s", others}};
      row["ratio"] = rate / refRate;
      if (refRate > theirs.samplesPerS) theirs = {threads, refRate, refGflops};
    }
    std::printf("    sgemm 256x1024x1024: oneDNN (DTLab's) %.1f GFLOP/s", onednn);
    if (openblas > 0.0) std::printf(", OpenBLAS (PyTorch's, torch.mm) %.1f GFLOP/s", openblas);
    std::printf("\n");
    if (!others.empty())
      std::printf("    ratio dtlab / pytorch: %.2fx\n",
                  rate / row["reference"]["samples_per_s"].get<double>());
    rows.push_back(row);
    std::fflush(stdout);
  }

  std::printf("  best sgemm rate measured: %.1f GFLOP/s (%s)\n", bestSgemm, bestSgemmBy.c_str());
  std::printf(
      "  best step: dtlab   %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
      "sgemm rate\n",
      ours.samplesPerS, ours.threads, ours.threads == 1 ? "" : "s", ours.gflops,
      100.0 * ours.gflops / bestSgemm);
  nlohmann::json out = {{"bench", "core"},
                        {"threads", ours.threads},
                        {"samples_per_s", ours.samplesPerS},
                        {"step_ms", 1000.0 * static_cast<double>(config.batch) / ours.samplesPerS},
                        {"gflops", ours.gflops},
                        {"sgemm_best_gflops", bestSgemm},
                        {"sgemm_best_by", bestSgemmBy},
                        {"sgemm_fraction", ours.gflops / bestSgemm},
                        {"by_threads", rows}};
  if (theirs.samplesPerS > 0.0) {
    std::printf(
        "  best step: pytorch %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
        "sgemm rate\n",
        theirs.samplesPerS, theirs.threads, theirs.threads == 1 ? "" : "s", theirs.gflops,
        100.0 * theirs.gflops / bestSgemm);
    std::printf("  ratio dtlab / pytorch, each at its best thread count: %.2fx\n",
                ours.samplesPerS / theirs.samplesPerS);
    out["reference"] = {{"impl", "pytorch"},
                        {"threads", theirs.threads},
                        {"samples_per_s", theirs.samplesPerS},
                        {"gflops", theirs.gflops},
                        {"sgemm_fraction", theirs.gflops / bestSgemm},
                        {"blas", torch->blas}};
    out["ratio"] = ours.samplesPerS / theirs.samplesPerS;
  } else {
    out["reference"] = nullptr;
  }
  if (args.has("--json")) std::printf("%s\n", out.dump().c_str());
  return 0;
}

bool wantsHelp(const std::vector<std::string>& argv) {
  return std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
    return a == "--help" || a == "-h" || a == "help";
  });
}

}  // namespace

std::string machineDescription() {
  std::string model = "unknown CPU", family, number;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") model = value;
    if (key == "cpu family") family = value;
    if (key == "model") number = value;
    if (line.empty() || (key == "processor" && !family.empty())) break;  // the first CPU only
  }
  std::string load;
  std::ifstream loadavg("/proc/loadavg");
  for (int i = 0; i < 3; ++i) {
    std::string field;
    if (loadavg >> field) load += (i == 0 ? "" : " ") + field;
  }
  std::string out = "machine: " + model;
  if (!family.empty()) out += " (family " + family + " model " + number + ")";
  out += ", " + std::to_string(core::availableCores()) + " cores";
  if (!load.empty()) out += ", load average " + load;
  return out;
}

const char* benchUsage() {
  return kBenchUsage;
}

int benchCommand(const std::vector<std::string>& argv) {
  if (argv.empty() || wantsHelp(argv)) {
    std::printf("usage: dtlab-cli bench <what> [options]\n\n%s", kBenchUsage);
    return argv.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "core") return benchCore(rest);
  if (argv[0] == "train") return benchTrain(rest);
  if (argv[0] == "allreduce") return benchAllReduceCommand(rest);
  if (argv[0] == "allreduce-rank") return benchAllReduceRank(rest);
  if (argv[0] == "tcp-rank") return benchTcpRank(rest);
  if (argv[0] == "store") return benchStore(rest);
  if (argv[0] == "data") return benchData(rest);
  if (argv[0] == "strategies") return benchStrategies(rest);
  throw UsageError("bench: unknown benchmark '" + argv[0] +
                   "' (expected core, train, allreduce, store, data or strategies)");
}

}  // namespace dtlab::app
