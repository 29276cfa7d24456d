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

  std::fprintf(
      out,
      "bench core: %s, batch %lld, cross-entropy, SGD momentum; per thread count %d "
      "repetitions of the same number of whole steps on each side, wall clock, interleaved\n",
      shapeText(config).c_str(), static_cast<long long>(config.batch), config.repetitions);
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  std::fflush(out);
  std::optional<TorchReference> torch;
  if (reference) {
    torch = findTorchReference(gemmThreads, out);
    if (torch) printBlasChoice(*torch, out);
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
    std::fprintf(out, "  threads %d, %lld steps a repetition:\n", threads,
                 static_cast<long long>(steps));
    std::fprintf(
        out, "    dtlab    %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n",
        rate, 1000.0 * static_cast<double>(config.batch) / rate, gflops, 100.0 * gflops / rowSgemm);
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
      std::fprintf(
          out, "    pytorch  %10.0f samples/s  step %7.3f ms  %6.1f GFLOP/s = %3.0f%% of sgemm\n",
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
    std::fprintf(out, "    sgemm 256x1024x1024: oneDNN (DTLab's) %.1f GFLOP/s", onednn);
    if (openblas > 0.0)
      std::fprintf(out, ", OpenBLAS (PyTorch's, torch.mm) %.1f GFLOP/s", openblas);
    std::fprintf(out, "\n");
    if (!others.empty())
      std::fprintf(out, "    ratio dtlab / pytorch: %.2fx\n",
                   rate / row["reference"]["samples_per_s"].get<double>());
    rows.push_back(row);
    std::fflush(out);
  }

  std::fprintf(out, "  best sgemm rate measured: %.1f GFLOP/s (%s)\n", bestSgemm,
               bestSgemmBy.c_str());
  std::fprintf(
      out,
      "  best step: dtlab   %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
      "sgemm rate\n",
      ours.samplesPerS, ours.threads, ours.threads == 1 ? "" : "s", ours.gflops,
      100.0 * ours.gflops / bestSgemm);
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
          {"sgemm_best_gflops", bestSgemm},
          {"sgemm_best_by", bestSgemmBy},
          {"sgemm_fraction", ours.gflops / bestSgemm},
          {"by_threads", rows}};
  if (theirs.samplesPerS > 0.0) {
    std::fprintf(
        out,
        "  best step: pytorch %8.0f samples/s at %d thread%s, %6.1f GFLOP/s = %.0f%% of the best "
        "sgemm rate\n",
        theirs.samplesPerS, theirs.threads, theirs.threads == 1 ? "" : "s", theirs.gflops,
        100.0 * theirs.gflops / bestSgemm);
    std::fprintf(out, "  ratio dtlab / pytorch, each at its best thread count: %.2fx\n",
                 ours.samplesPerS / theirs.samplesPerS);
    json["reference"] = {{"impl", "pytorch"},
                         {"threads", theirs.threads},
                         {"samples_per_s", theirs.samplesPerS},
                         {"gflops", theirs.gflops},
                         {"sgemm_fraction", theirs.gflops / bestSgemm},
                         {"blas", torch->blas}};
    json["ratio"] = ours.samplesPerS / theirs.samplesPerS;
    result.ratio = ours.samplesPerS / theirs.samplesPerS;
  } else {
    json["reference"] = nullptr;
  }
  return result;
}

}  // namespace dtlab::bench
