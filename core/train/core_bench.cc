#include "core/train/core_bench.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/backend/cpu_backend.h"
#include "core/common/check.h"
#include "core/common/statistics.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/train/worker.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

// Runs fn in repetitions of enough calls to last about `seconds` each; returns the
// seconds per call of every repetition.
template <typename Fn>
std::vector<double> timeRepetitions(Fn&& fn, int warmup, int repetitions, double seconds) {
  for (int i = 0; i < warmup; ++i) fn();
  const Clock::time_point t0 = Clock::now();
  fn();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(seconds / std::max(once, 1e-7)));
  std::vector<double> perCall;
  for (int r = 0; r < repetitions; ++r) {
    const Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < calls; ++i) fn();
    perCall.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                      static_cast<double>(calls));
  }
  return perCall;
}

}  // namespace

ExperimentSpec coreBenchSpec(const CoreBenchConfig& config) {
  DTLAB_ENFORCE(config.batch > 0 && config.inputs > 0 && config.hidden > 0 && config.layers >= 0 &&
                    config.classes >= 2,
                "bad benchmark shape");
  DTLAB_ENFORCE(config.model == "mlp" || config.model == "cnn" || config.model == "transformer",
                "bench core has no model '", config.model, "'");
  ExperimentSpec spec;
  if (config.model == "transformer") {
    spec.dataset = defaultDataset("language");
    spec.dataset.features = config.tokens;
    spec.dataset.classes = config.classes;
    spec.model.kind = "transformer";
    spec.model.activation = Activation::kGELU;
    spec.model.parameters.set("layers", config.layers);
    spec.model.parameters.set("width", config.hidden);
    spec.model.parameters.set("heads", config.heads);
  } else if (config.model == "cnn") {
    spec.dataset = defaultDataset("shapes");
    spec.model.kind = "cnn";
    spec.model.parameters.set("channels", config.channels);
    spec.model.parameters.set("blocks", config.blocks);
  } else {
    spec.dataset.kind = "gaussian_blobs";  // any width and class count
    spec.dataset.features = config.inputs;
    spec.dataset.classes = config.classes;
  }
  spec.dataset.trainSize = config.batch * 8;
  spec.dataset.testSize = spec.dataset.classes;
  spec.dataset.seed = 1;
  if (config.model != "transformer")
    spec.model.hidden.assign(static_cast<std::size_t>(config.layers), config.hidden);
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.lr = 0.01f;
  spec.optimizer.momentum = 0.9f;
  return spec;
}

struct CoreStepBench::Impl {
  explicit Impl(const CoreBenchConfig& c)
      : config(c),
        spec(coreBenchSpec(c)),
        backend(makeBackend(c.device, c.threads, c.precision)),
        dataset(makeDataset(spec.dataset)),
        worker(spec, *backend, *dataset, allSamples(spec), BatchSlice::whole(c.batch), 0) {}

  static std::vector<int64_t> allSamples(const ExperimentSpec& spec) {
    std::vector<int64_t> all(static_cast<std::size_t>(spec.dataset.trainSize));
    std::iota(all.begin(), all.end(), int64_t{0});
    return all;
  }
  void step() {
    worker.loadBatch();
    worker.computeGradients(1.0f / static_cast<float>(config.batch));
    worker.applyUpdate(++steps);
  }

  CoreBenchConfig config;
  ExperimentSpec spec;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Dataset> dataset;
  Worker worker;
  int64_t steps = 0;
};

CoreStepBench::CoreStepBench(const CoreBenchConfig& config)
    : impl_(std::make_unique<Impl>(config)) {
  for (int i = 0; i < config.warmupSteps; ++i) impl_->step();
}

CoreStepBench::~CoreStepBench() = default;

int64_t CoreStepBench::stepsFor(double seconds) {
  // Steps for a third of the time, not one: a single step that lost the CPU for a time
  // slice on a shared machine would make every repetition too short.
  int64_t done = 0;
  double spent = 0.0;
  while (done == 0 || spent < seconds / 3.0) {
    spent += timeSteps(1);
    ++done;
  }
  return std::max<int64_t>(3, static_cast<int64_t>(seconds * static_cast<double>(done) / spent));
}

double CoreStepBench::timeSteps(int64_t steps) {
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < steps; ++i) impl_->step();
  impl_->backend->synchronize();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double CoreStepBench::flopsPerStep() const {
  return impl_->worker.model().trainingFlops(impl_->config.batch);
}

int CoreStepBench::threads() const {
  return impl_->backend->threads();
}

CoreBenchResult benchCoreStep(const CoreBenchConfig& config) {
  CoreStepBench bench(config);
  const int64_t steps = bench.stepsFor(config.secondsPerRepetition);
  std::vector<double> perStep;
  for (int r = 0; r < config.repetitions; ++r)
    perStep.push_back(bench.timeSteps(steps) / static_cast<double>(steps));
  CoreBenchResult result;
  result.threads = bench.threads();
  for (double s : perStep)
    result.repetitionSamplesPerS.push_back(static_cast<double>(config.batch) / s);
  const double stepS = median(perStep);
  result.stepMs = stepS * 1000.0;
  result.samplesPerS = static_cast<double>(config.batch) / stepS;
  result.gflops = bench.flopsPerStep() / stepS * 1e-9;
  return result;
}

double benchGemmGflops(int threads, int64_t m, int64_t n, int64_t k, double seconds) {
  CpuBackend backend(threads);
  float* a = backend.allocate(m * k);
  float* b = backend.allocate(k * n);
  float* c = backend.allocate(m * n);
  backend.fill(a, m * k, 0.5f);
  backend.fill(b, k * n, 0.25f);
  const std::vector<double> perCall =
      timeRepetitions([&] { backend.gemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n); }, 3,
                      7, seconds / 7.0);
  backend.release(a);
  backend.release(b);
  backend.release(c);
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
         median(perCall) * 1e-9;
}

StepGemmsResult benchStepGemms(const CoreBenchConfig& config, double seconds) {
  std::unique_ptr<Backend> backend = makeBackend(config.device, config.threads, config.precision);
  // Layer widths in -> hidden x layers -> classes; per layer (in, out) with rows = batch:
  // forward X W (rows x out x in), weight gradient X^T dY (in x out x rows) and, past the
  // first layer, input gradient dY W^T (rows x in x out), as the mlp kind computes them.
  std::vector<int64_t> widths = {config.inputs};
  for (int64_t l = 0; l < config.layers; ++l) widths.push_back(config.hidden);
  widths.push_back(config.classes);
  const int64_t rows = config.batch;
  int64_t widest = 0;
  for (int64_t w : widths) widest = std::max(widest, w);
  float* x = backend->allocate(rows * widest);
  float* dy = backend->allocate(rows * widest);
  float* w = backend->allocate(widest * widest);
  float* out = backend->allocate(std::max(rows, widest) * widest);
  backend->fill(x, rows * widest, 0.5f);
  backend->fill(dy, rows * widest, 0.25f);
  backend->fill(w, widest * widest, 0.125f);
  StepGemmsResult result;
  double flops = 0.0;
  auto sequence = [&] {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const int64_t in = widths[l], o = widths[l + 1];
      backend->gemm(false, false, rows, o, in, 1.0f, x, in, w, o, 0.0f, out, o);
      backend->gemm(true, false, in, o, rows, 1.0f, x, in, dy, o, 0.0f, out, o);
      if (l > 0) backend->gemm(false, true, rows, in, o, 1.0f, dy, o, w, o, 0.0f, out, in);
    }
    backend->synchronize();
  };
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const double macs = static_cast<double>(rows * widths[l] * widths[l + 1]);
    flops += 2.0 * macs * (l > 0 ? 3.0 : 2.0);
    result.gemmsPerStep += l > 0 ? 3 : 2;
  }
  const std::vector<double> perCall = timeRepetitions(sequence, 3, 7, seconds / 7.0);
  backend->release(x);
  backend->release(dy);
  backend->release(w);
  backend->release(out);
  const double s = median(perCall);
  result.ms = s * 1000.0;
  result.gflops = flops / s * 1e-9;
  return result;
}

}  // namespace dtlab::core
