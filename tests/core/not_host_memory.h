#pragma once

// A CPU backend that says its memory is not the host's, for tests of the paths GPU workers
// take (resident rows, sample sources, staged parameter-server calls), run and checked on the
// CPU.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/data/sample_program.h"
#include "core/optim/optimizer.h"

namespace dtlab::core::test {

// What a GPU backend's sample source does (a kernel thread per sample running generateSample on
// a copy of the program), done on the host: the CPU backend's memory is host memory.
class HostProgramSource final : public SampleSource {
 public:
  HostProgramSource(const datagen::SampleProgram& program, int64_t& generated)
      : program_(program), generated_(generated) {}
  void generate(Split split, std::span<const int64_t> indices, float* x, float* y) override {
    std::vector<float> scratch(static_cast<std::size_t>(scratchFloats(program_)));
    for (std::size_t k = 0; k < indices.size(); ++k) {
      y[k] = generateSample(program_, split, indices[k],
                            x + static_cast<int64_t>(k) * program_.features, scratch.data());
    }
    generated_ += static_cast<int64_t>(indices.size());
  }

 private:
  datagen::SampleProgram program_;
  int64_t& generated_;
};

// The CPU backend saying its memory is not the host's, as a GPU's is not: the worker then keeps
// its rows in "backend memory" and gathers batches there (Backend::gatherRows), the path GPU
// workers take, here run and checked on the CPU. With withSource it also generates samples "in
// its memory" (makeSampleSource), as the CUDA backend does.
class NotHostMemory final : public Backend {
 public:
  explicit NotHostMemory(bool withSource = false) : withSource_(withSource) {}
  std::string name() const override { return "cpu (as if not host memory)"; }
  bool hostMemory() const override { return false; }
  int threads() const override { return cpu_.threads(); }
  float* allocate(int64_t count) override { return cpu_.allocate(count); }
  void release(float* p) noexcept override { cpu_.release(p); }
  void upload(float* dst, const float* host, int64_t count) override {
    ++uploads;
    cpu_.upload(dst, host, count);
  }
  void download(float* host, const float* src, int64_t count) override {
    cpu_.download(host, src, count);
  }
  void fill(float* dst, int64_t count, float value) override { cpu_.fill(dst, count, value); }
  void gatherRows(const float* src, int64_t cols, std::span<const int64_t> rows,
                  float* dst) override {
    ++gathers;
    cpu_.gatherRows(src, cols, rows, dst);
  }
  std::unique_ptr<SampleSource> makeSampleSource(const datagen::SampleProgram& program) override {
    if (!withSource_) return nullptr;
    return std::make_unique<HostProgramSource>(program, generated);
  }
  void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) override {
    cpu_.gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols,
                      std::optional<Activation> act, float* out, float* zOut) override {
    cpu_.biasActivation(z, bias, rows, cols, act, out, zOut);
  }
  void activationBackward(const float* dOut, const float* z, const float* out, int64_t rows,
                          int64_t cols, std::optional<Activation> act, float* dz,
                          float* dBias) override {
    cpu_.activationBackward(dOut, z, out, rows, cols, act, dz, dBias);
  }
  LossResult softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows,
                                 int64_t classes, float gradScale, float* dLogits) override {
    return cpu_.softmaxCrossEntropy(logits, labels, rows, classes, gradScale, dLogits);
  }
  LossResult meanSquaredError(const float* pred, const float* target, int64_t rows, int64_t outputs,
                              float gradScale, float* dPred) override {
    return cpu_.meanSquaredError(pred, target, rows, outputs, gradScale, dPred);
  }
  std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config) override {
    return cpu_.makeOptimizer(config);
  }
  void optimizerUpdate(Optimizer& optimizer, float* params, const float* grads, int64_t begin,
                       int64_t end, int64_t step, float lr) override {
    cpu_.optimizerUpdate(optimizer, params, grads, begin, end, step, lr);
  }

  int64_t uploads = 0;
  int64_t gathers = 0;
  int64_t generated = 0;  // samples the source generated

 private:
  bool withSource_;
  CpuBackend cpu_{1};
};

}  // namespace dtlab::core::test
