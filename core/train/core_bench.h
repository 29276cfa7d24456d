#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/statistics.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// `dtlab-cli bench core`: full single-process training steps with cross-entropy and SGD
// with momentum, of an MLP in -> hidden x layers -> classes, or of the cnn kind on shapes'
// 1 x 28 x 28 images (inputs 784 and classes 10, the dataset's): `channels` in the first of
// `blocks` convolution blocks, then hidden x layers dense layers; or of the transformer kind on
// the language dataset: `tokens` tokens of a vocabulary of `classes`, `layers` blocks of width
// `hidden` with `heads` heads (GELU, causal attention).
struct CoreBenchConfig {
  std::string device = "cpu";              // "cpu" or "cuda[:N]"
  Precision precision = Precision::kFp32;  // kTf32, kBf16: CUDA only
  int threads = 1;
  std::string model = "mlp";  // or "cnn", "transformer"
  int64_t batch = 256;
  int64_t inputs = 256;
  int64_t hidden = 1024;
  int64_t layers = 2;
  int64_t classes = 10;
  int64_t channels = 16;  // cnn
  int64_t blocks = 2;     // cnn
  int64_t tokens = 64;    // transformer
  int64_t heads = 4;      // transformer
  int warmupSteps = 10;
  int repetitions = 7;
  double secondsPerRepetition = 0.3;
};

struct CoreBenchResult {
  int threads = 1;
  double samplesPerS = 0.0;  // median over repetitions
  double stepMs = 0.0;       // median
  double gflops = 0.0;       // training flops of a step / median step time
  std::vector<double> repetitionSamplesPerS;
};

// Whole training steps (loadBatch + forward + loss + backward + update, as a training run
// does them) of one model, timed on request, so that a harness can interleave its
// repetitions with another implementation's.
class CoreStepBench {
 public:
  // Builds the model and its data and runs config.warmupSteps untimed steps.
  explicit CoreStepBench(const CoreBenchConfig& config);
  ~CoreStepBench();
  CoreStepBench(const CoreStepBench&) = delete;
  CoreStepBench& operator=(const CoreStepBench&) = delete;

  // Steps (at least 3) that take about `seconds`, from timing steps for a third of that.
  int64_t stepsFor(double seconds);
  // Wall-clock seconds of `steps` consecutive steps.
  double timeSteps(int64_t steps);
  // Floating-point operations of one step (the model's training flops for the batch).
  double flopsPerStep() const;
  int threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The experiment whose training step the bench times (a batch of config.batch samples).
ExperimentSpec coreBenchSpec(const CoreBenchConfig& config);

// config.repetitions repetitions of about config.secondsPerRepetition each; medians.
CoreBenchResult benchCoreStep(const CoreBenchConfig& config);

// Median GFLOP/s of the CPU backend's GEMM on C[m x n] = A[m x k] B[k x n].
double benchGemmGflops(int threads, int64_t m, int64_t n, int64_t k, double seconds = 0.5);

// The GEMMs of one training step of config's model (forward, weight and input gradients, in
// the shapes and transposes the step uses them), alone on config.device's library: the
// median milliseconds of the sequence and its GFLOP/s. A step can at best match this.
struct StepGemmsResult {
  double ms = 0.0;
  double gflops = 0.0;
  int gemmsPerStep = 0;
};
StepGemmsResult benchStepGemms(const CoreBenchConfig& config, double seconds = 1.0);

}  // namespace dtlab::core
