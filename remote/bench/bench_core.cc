// `dtlab-cli bench core` (remote/bench/bench_core.h).
#include "remote/bench/bench_core.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/backend/cpu_backend.h"
#include "core/metrics/metrics.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/reference_process.h"

namespace dtlab::bench {
namespace {
// bench core on a GPU: the step against the same step's GEMMs alone on the device's library
// (cuBLAS), both timed here; no CPU reference.
CoreBenchResult benchCoreOnDevice(core::CoreBenchConfig config, int64_t fixedSteps,
                                  std::FILE* out) {
  config.threads = 1;
  core::CoreStepBench bench(config);
  const int64_t steps = fixedSteps > 0 ? fixedSteps : bench.stepsFor(config.secondsPerRepetition);
  std::vector<double> rates;
  for (int rep = 0; rep < config.repetitions; ++rep)
    rates.push_back(static_cast<double>(steps * config.batch) / bench.timeSteps(steps));
  const double rate = core::median(rates);
  const double stepMs = 1000.0 * static_cast<double>(config.batch) / rate;
  const double gflops = rate / static_cast<double>(config.batch) * bench.flopsPerStep() * 1e-9;
  const core::StepGemmsResult gemms = core::benchStepGemms(config);
  std::fprintf(
      out,
      "bench core on %s: %s, batch %lld, cross-entropy, SGD momentum, %s; %d repetitions of "
      "%lld steps, wall clock\n",
      config.device.c_str(), shapeText(config).c_str(), static_cast<long long>(config.batch),
      core::toString(config.precision), config.repetitions, static_cast<long long>(steps));
  std::fprintf(out, "  training step:     %10.0f samples/s  %8.3f ms  %8.1f GFLOP/s\n", rate,
               stepMs, gflops);
  std::fprintf(out, "  its %2d GEMMs alone:                      %8.3f ms  %8.1f GFLOP/s\n",
               gemms.gemmsPerStep, gemms.ms, gemms.gflops);
  std::fprintf(out, "  step / GEMMs alone: %.0f%% of the GEMM throughput on the same shapes\n",
               100.0 * gflops / gemms.gflops);
  CoreBenchResult result;
  result.threads = 1;
  result.samplesPerS = rate;
  result.gflops = gflops;
  result.json = {{"bench", "core"},
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
  return result;
}

// The best of a kind of measurement over the thread counts, by samples/s.
struct BestStep {
  int threads = 0;
  double samplesPerS = 0.0;
  double gflops = 0.0;
};

// The machine's GEMM rate: the best sgemm measured in this run at the step's largest shape,
// by DTLab's library (oneDNN) and, with the reference, OpenBLAS (through torch.mm in the
// reference process and in blas_probe.py), at any thread count.
struct BestSgemm {
  double gflops = 0.0;
  std::string by;
  void seen(double rate, const std::string& what) {
    if (rate > gflops) {
      gflops = rate;
      by = what;
    }
  }
};

// One thread count's measurements: the samples/s of each repetition on each side, and the
// sgemm rates at that thread count.
struct ThreadCountTimes {
  std::vector<double> mine, others;
  std::vector<double> onednnTurns;  // DTLab's sgemm rate, one turn per repetition
  nlohmann::json refInfo;           // the reference process's announcement; null without one
  double onednn = 0.0;              // the median of onednnTurns
  double openblas = 0.0;
};

void printCoreBenchHeader(const core::CoreBenchConfig& config, std::FILE* out) {
  std::fprintf(
      out,
      "bench core: %s, batch %lld, cross-entropy, SGD momentum; per thread count %d "
      "repetitions of the same number of whole steps on each side and of DTLab's sgemm, wall "
      "clock, interleaved\n",
      shapeText(config).c_str(), static_cast<long long>(config.batch), config.repetitions);
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  std::fflush(out);
}

// Times `steps` whole steps per repetition at `threads` threads, DTLab's and (with `torch`)
// the reference process's, taking turns which side goes first, and DTLab's sgemm rate at that
// thread count as a turn of every repetition: the step's share of it compares figures of the
// same minutes (on a shared VM the machine's speed drifts by 10% and more between minutes, and
// an sgemm timed once after the steps moved the share from 77% to 87% between two runs).
ThreadCountTimes timeThreadCount(const core::CoreBenchConfig& config, int threads, int64_t steps,
                                 core::CoreStepBench& bench,
                                 const std::optional<TorchReference>& torch) {
  ThreadCountTimes times;
  std::unique_ptr<ReferenceProcess> ref;
  if (torch) {
    std::vector<std::string> command = {torch->python, torch->scripts + "/torch_step.py", "--serve",
                                        "--threads", std::to_string(threads)};
    for (const std::string& a : shapeArgs(config)) command.push_back(a);
    ref = std::make_unique<ReferenceProcess>(command, torch->environment(threads));
    times.refInfo = ref->readJson();
  }
  for (int rep = 0; rep < config.repetitions; ++rep) {
    for (int k = 0; k < 2; ++k) {
      const bool dtlabTurn = (rep + k) % 2 == 0;
      if (!dtlabTurn && !ref) continue;
      settle();
      const double seconds =
          dtlabTurn ? bench.timeSteps(steps)
                    : ref->request("steps " + std::to_string(steps)).at("seconds").get<double>();
      (dtlabTurn ? times.mine : times.others)
          .push_back(static_cast<double>(steps * config.batch) / seconds);
    }
    settle();  // the reference's BLAS threads stop spinning
    times.onednnTurns.push_back(core::benchGemmGflops(threads, 256, 1024, 1024, 0.25));
  }
  ref.reset();
  times.onednn = core::median(times.onednnTurns);
  times.openblas =
      ref || times.refInfo.is_null() ? 0.0 : times.refInfo.at("sgemm_gflops").get<double>();
  return times;
}

// Prints one thread count's lines and returns its row of the JSON report; `ours` and
// `theirs` keep the best rates seen so far.
nlohmann::json reportThreadCount(const core::CoreBenchConfig& config, int threads, int64_t steps,
                                 double flopsPerStep, const ThreadCountTimes& times, BestStep& ours,
                                 BestStep& theirs, std::FILE* out) {
  const double onednn = times.onednn;
  const double openblas = times.openblas;
  const double rowSgemm = std::max(onednn, openblas);
  const double rate = core::median(times.mine);
  const double gflops = rate / static_cast<double>(config.batch) * flopsPerStep * 1e-9;
  std::fprintf(out, "  threads %d, %lld steps a repetition:\n", threads,
               static_cast<long long>(steps));
  std::fprintf(
      out, "    dtlab    %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n", rate,
      1000.0 * static_cast<double>(config.batch) / rate, gflops, 100.0 * gflops / rowSgemm);
  nlohmann::json row = {{"threads", threads},
                        {"steps", steps},
                        {"samples_per_s", rate},
                        {"gflops", gflops},
                        {"sgemm_onednn_gflops", onednn},
                        {"repetition_sgemm_onednn_gflops", times.onednnTurns},
                        {"sgemm_fraction", gflops / rowSgemm},
                        {"repetition_samples_per_s", times.mine}};
  if (rate > ours.samplesPerS) ours = {threads, rate, gflops};
  if (!times.others.empty()) {
    const double refRate = core::median(times.others);
    const double refGflops = refRate / static_cast<double>(config.batch) * flopsPerStep * 1e-9;
    std::fprintf(out,
                 "    pytorch  %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n",
                 refRate, 1000.0 * static_cast<double>(config.batch) / refRate, refGflops,
                 100.0 * refGflops / rowSgemm);
    row["reference"] = {{"impl", times.refInfo.at("impl")},
                        {"samples_per_s", refRate},
                        {"gflops", refGflops},
                        {"sgemm_gflops", openblas},
                        {"sgemm_fraction", refGflops / rowSgemm},
                        {"repetition_samples_per_s", times.others}};
    row["ratio"] = rate / refRate;
    if (refRate > theirs.samplesPerS) theirs = {threads, refRate, refGflops};
  }
  std::fprintf(out, "    sgemm 256x1024x1024: oneDNN (DTLab's) %.1f GFLOP/s", onednn);
  if (openblas > 0.0) std::fprintf(out, ", OpenBLAS (PyTorch's, torch.mm) %.1f GFLOP/s", openblas);
  std::fprintf(out, "\n");
  if (!times.others.empty())
    std::fprintf(out, "    ratio dtlab / pytorch: %.2fx\n",
                 rate / row["reference"]["samples_per_s"].get<double>());
  return row;
}

// Prints the best step on each side against the best sgemm rate, and returns the result with
// its JSON report (`rows`: one per thread count).
CoreBenchResult reportBestSteps(const core::CoreBenchConfig& config, const BestStep& ours,
                                const BestStep& theirs, const BestSgemm& bestSgemm,
                                const nlohmann::json& rows,
                                const std::optional<TorchReference>& torch, std::FILE* out) {
  std::fprintf(out, "  best sgemm rate measured: %.1f GFLOP/s (%s)\n", bestSgemm.gflops,
               bestSgemm.by.c_str());
  std::fprintf(
      out,
      "  best step: dtlab   %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
      "sgemm rate\n",
      ours.samplesPerS, ours.threads, ours.threads == 1 ? "" : "s", ours.gflops,
      100.0 * ours.gflops / bestSgemm.gflops);
  CoreBenchResult result;
  result.threads = ours.threads;
  result.samplesPerS = ours.samplesPerS;
  result.gflops = ours.gflops;
  nlohmann::json& json = result.json;
  json = {{"bench", "core"},
          {"threads", ours.threads},
          {"samples_per_s", ours.samplesPerS},
          {"step_ms", 1000.0 * static_cast<double>(config.batch) / ours.samplesPerS},
          {"gflops", ours.gflops},
          {"sgemm_best_gflops", bestSgemm.gflops},
          {"sgemm_best_by", bestSgemm.by},
          {"sgemm_fraction", ours.gflops / bestSgemm.gflops},
          {"by_threads", rows}};
  if (theirs.samplesPerS > 0.0) {
    std::fprintf(
        out,
        "  best step: pytorch %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
        "sgemm rate\n",
        theirs.samplesPerS, theirs.threads, theirs.threads == 1 ? "" : "s", theirs.gflops,
        100.0 * theirs.gflops / bestSgemm.gflops);
    std::fprintf(out, "  ratio dtlab / pytorch, each at its best thread count: %.2fx\n",
                 ours.samplesPerS / theirs.samplesPerS);
    json["reference"] = {{"impl", "pytorch"},
                         {"threads", theirs.threads},
                         {"samples_per_s", theirs.samplesPerS},
                         {"gflops", theirs.gflops},
                         {"sgemm_fraction", theirs.gflops / bestSgemm.gflops},
                         {"blas", torch->blas}};
    json["ratio"] = ours.samplesPerS / theirs.samplesPerS;
    result.ratio = ours.samplesPerS / theirs.samplesPerS;
  } else {
    json["reference"] = nullptr;
  }
  return result;
}

}  // namespace

CoreBenchResult runCoreBench(const CoreBenchOptions& options, std::FILE* out) {
  core::CoreBenchConfig config = options.config;
  const int64_t fixedSteps = options.fixedSteps;
  if (config.device != "cpu") return benchCoreOnDevice(config, fixedSteps, out);
  const bool reference = options.reference;
  std::vector<int> threadCounts = options.threadCounts;
  if (threadCounts.empty())
    for (int t = 1; t <= core::availableCores(); ++t) threadCounts.push_back(t);
  // blas_probe.py chooses the OpenBLAS kernel by its rate at the most threads measured.
  const int gemmThreads = threadCounts.back();

  printCoreBenchHeader(config, out);
  std::optional<TorchReference> torch;
  if (reference) {
    torch = findTorchReference(gemmThreads, out);
    if (torch) printBlasChoice(*torch, out);
  }

  BestStep ours, theirs;
  BestSgemm bestSgemm;
  if (torch && torch->blas.value("gflops", 0.0) > 0.0)
    bestSgemm.seen(torch->blas["gflops"].get<double>(),
                   "OpenBLAS, " + std::to_string(gemmThreads) + " threads, blas_probe");
  nlohmann::json rows = nlohmann::json::array();
  for (int threads : threadCounts) {
    config.threads = threads;
    core::CoreStepBench bench(config);
    const double flopsPerStep = bench.flopsPerStep();
    const int64_t steps = fixedSteps > 0 ? fixedSteps : bench.stepsFor(config.secondsPerRepetition);
    const ThreadCountTimes times = timeThreadCount(config, threads, steps, bench, torch);
    const std::string suffix = threads == 1 ? " thread" : " threads";
    bestSgemm.seen(times.onednn, "oneDNN, " + std::to_string(threads) + suffix);
    bestSgemm.seen(times.openblas, "OpenBLAS, " + std::to_string(threads) + suffix + ", torch.mm");
    rows.push_back(
        reportThreadCount(config, threads, steps, flopsPerStep, times, ours, theirs, out));
    std::fflush(out);
  }
  return reportBestSteps(config, ours, theirs, bestSgemm, rows, torch, out);
}

}  // namespace dtlab::bench
