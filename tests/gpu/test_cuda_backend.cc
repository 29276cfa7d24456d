// The CUDA backend against the CPU backend: every kernel, every optimizer and a whole MLP
// training step (forward, backward, one update) on the same weights and batch agree to 1e-4
// relative in FP32. Needs a GPU: without one (or in a build without CUDA) the GPU cases
// skip with the reason, and only the device-name checks run.
#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/config.h"
#include "core/common/random.h"
#include "core/nn/mlp.h"
#include "core/optim/optimizer.h"
#include "tests/gpu/gpu_available.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

std::vector<float> randomVector(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
}

// ||a - b|| / ||b|| over whole buffers.
double relative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

#define EXPECT_CLOSE(a, b, tolerance)                                                         \
  do {                                                                                        \
    const double rel = relative((a), (b));                                                    \
    QVERIFY2(rel <= (tolerance),                                                              \
             qPrintable(QString("%1 vs %2: relative %3").arg(#a, #b, QString::number(rel)))); \
  } while (0)

// One buffer on each backend, filled from the same host values.
struct Pair {
  Backend& cpu;
  Backend& gpu;
  float* onCpu = nullptr;
  float* onGpu = nullptr;
  int64_t n = 0;
  Pair(Backend& c, Backend& g, const std::vector<float>& host)
      : cpu(c), gpu(g), n(static_cast<int64_t>(host.size())) {
    onCpu = cpu.allocate(n);
    onGpu = gpu.allocate(n);
    cpu.upload(onCpu, host.data(), n);
    gpu.upload(onGpu, host.data(), n);
  }
  ~Pair() {
    cpu.release(onCpu);
    gpu.release(onGpu);
  }
  std::vector<float> cpuValues() const {
    std::vector<float> v(static_cast<std::size_t>(n));
    cpu.download(v.data(), onCpu, n);
    return v;
  }
  std::vector<float> gpuValues() const {
    std::vector<float> v(static_cast<std::size_t>(n));
    gpu.download(v.data(), onGpu, n);
    return v;
  }
};

}  // namespace

class TestCudaBackend : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Backend> gpu_;

 private slots:
  void init() {
    cpu_ = makeBackend("cpu", 1);
    gpu_.reset();
    if (test::whyNoGpu().empty()) gpu_ = makeBackend("cuda:0", 1);
  }

  // Runs everywhere: device names are checked before any device is touched.
  void deviceNamesAreChecked() {
    for (const char* bad : {"cuda:x", "cuda:-1", "cuda:0x", "gpu"}) {
      try {
        makeBackend(bad, 1);
        QFAIL(qPrintable(QString("accepted '%1'").arg(bad)));
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos,
                 e.what());
      }
    }
    try {
      makeBackend("cpu", 1, Precision::kBf16);
      QFAIL("a CPU backend took bf16");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("fp32 only") != std::string::npos, e.what());
    }
    if (!DTLAB_HAVE_CUDA) {
      try {
        makeBackend("cuda:0", 1);
        QFAIL("a build without CUDA made a cuda backend");
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("no CUDA plugin") != std::string::npos, e.what());
      }
    }
  }

  void missingDeviceIsNamed() {
    SKIP_WITHOUT_GPU();
    try {
      makeBackend("cuda:999", 1);
      QFAIL("made a backend on cuda:999");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("cuda:999") != std::string::npos, e.what());
    }
    QVERIFY2(gpu_->name().find("cuda:0 (") == 0, gpu_->name().c_str());
  }

  // Every transpose combination, with row strides wider than the matrices and beta != 0.
  void gemmMatchesCpu() {
    SKIP_WITHOUT_GPU();
    const int64_t m = 67, n = 129, k = 300, pad = 3;
    for (const bool transA : {false, true})
      for (const bool transB : {false, true}) {
        const int64_t aRows = transA ? k : m, aCols = transA ? m : k;
        const int64_t bRows = transB ? n : k, bCols = transB ? k : n;
        const int64_t lda = aCols + pad, ldb = bCols + pad, ldc = n + pad;
        Pair a(*cpu_, *gpu_, randomVector(aRows * lda, 1));
        Pair b(*cpu_, *gpu_, randomVector(bRows * ldb, 2));
        Pair c(*cpu_, *gpu_, randomVector(m * ldc, 3));
        for (Backend* backend : {cpu_.get(), gpu_.get()}) {
          const bool onCpu = backend == cpu_.get();
          backend->gemm(transA, transB, m, n, k, 0.5f, onCpu ? a.onCpu : a.onGpu, lda,
                        onCpu ? b.onCpu : b.onGpu, ldb, 0.25f, onCpu ? c.onCpu : c.onGpu, ldc);
        }
        EXPECT_CLOSE(c.gpuValues(), c.cpuValues(), 1e-5);
      }
  }

  // Batches from a training set kept in backend memory: the CPU's rows exactly (runs
  // everywhere), the GPU's bit for bit the same, through growing and reused row lists.
  void gatherRowsPicksTheRows() {
    const int64_t rows = 700, cols = 37;
    const std::vector<float> table = randomVector(rows * cols, 21);
    float* src = cpu_->allocate(rows * cols);
    cpu_->upload(src, table.data(), rows * cols);
    const std::vector<int64_t> pick = {699, 0, 5, 5, 312};
    std::vector<float> out(pick.size() * cols);
    cpu_->gatherRows(src, cols, pick, out.data());
    for (std::size_t r = 0; r < pick.size(); ++r)
      for (int64_t c = 0; c < cols; ++c)
        QCOMPARE(out[r * cols + static_cast<std::size_t>(c)],
                 table[static_cast<std::size_t>(pick[r] * cols + c)]);
    cpu_->release(src);
    SKIP_WITHOUT_GPU();
    Pair table2(*cpu_, *gpu_, table);
    for (const int64_t count : {int64_t{5}, int64_t{600}, int64_t{3}}) {
      std::vector<int64_t> list(static_cast<std::size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        list[static_cast<std::size_t>(i)] = (i * 211 + count) % rows;
      Pair dst(*cpu_, *gpu_, std::vector<float>(static_cast<std::size_t>(count * cols), 0.0f));
      cpu_->gatherRows(table2.onCpu, cols, list, dst.onCpu);
      gpu_->gatherRows(table2.onGpu, cols, list, dst.onGpu);
      QVERIFY(dst.gpuValues() == dst.cpuValues());
    }
  }

  // tf32 and bf16 round the GEMM inputs (10- and 7-bit stored mantissas), accumulate in FP32:
  // within their rounding of the FP32 result, and bf16 visibly not FP32 (it was used).
  void reducedPrecisionGemmsMatchCpuWithinTheirRounding() {
    SKIP_WITHOUT_GPU();
    const int64_t m = 256, n = 192, k = 512;
    for (const Precision precision : {Precision::kTf32, Precision::kBf16}) {
      std::unique_ptr<Backend> gpu = makeBackend("cuda:0", 1, precision);
      QVERIFY2(gpu->name().find(toString(precision)) != std::string::npos, gpu->name().c_str());
      for (const bool transA : {false, true}) {
        const std::vector<float> aHost = randomVector(m * k, 11);
        const std::vector<float> bHost = randomVector(k * n, 12);
        Pair a(*cpu_, *gpu, aHost), b(*cpu_, *gpu, bHost);
        Pair c(*cpu_, *gpu, std::vector<float>(static_cast<std::size_t>(m * n), 0.0f));
        cpu_->gemm(transA, false, m, n, k, 1.0f, a.onCpu, transA ? m : k, b.onCpu, n, 0.0f, c.onCpu,
                   n);
        gpu->gemm(transA, false, m, n, k, 1.0f, a.onGpu, transA ? m : k, b.onGpu, n, 0.0f, c.onGpu,
                  n);
        const double rel = relative(c.gpuValues(), c.cpuValues());
        const double bound = precision == Precision::kTf32 ? 2e-3 : 1e-2;
        QVERIFY2(rel <= bound,
                 qPrintable(QString("%1: relative %2").arg(toString(precision)).arg(rel)));
        if (precision == Precision::kBf16)
          QVERIFY2(rel > 1e-5, qPrintable(QString("bf16 equal to fp32 (%1)").arg(rel)));
      }
    }
  }

  void activationsMatchCpu() {
    SKIP_WITHOUT_GPU();
    const int64_t rows = 300, cols = 77;
    const std::vector<float> zHost = randomVector(rows * cols, 4, 2.0f);
    const std::vector<float> biasHost = randomVector(cols, 5);
    const std::vector<float> dOutHost = randomVector(rows * cols, 6);
    for (const std::optional<Activation> act :
         {std::optional<Activation>(), std::optional(Activation::kReLU),
          std::optional(Activation::kGELU), std::optional(Activation::kTanh)}) {
      Pair z(*cpu_, *gpu_, zHost), bias(*cpu_, *gpu_, biasHost), out(*cpu_, *gpu_, zHost),
          zOut(*cpu_, *gpu_, zHost), dOut(*cpu_, *gpu_, dOutHost), dz(*cpu_, *gpu_, dOutHost),
          dBias(*cpu_, *gpu_, biasHost);
      cpu_->biasActivation(z.onCpu, bias.onCpu, rows, cols, act, out.onCpu, zOut.onCpu);
      gpu_->biasActivation(z.onGpu, bias.onGpu, rows, cols, act, out.onGpu, zOut.onGpu);
      EXPECT_CLOSE(out.gpuValues(), out.cpuValues(), 1e-5);
      EXPECT_CLOSE(zOut.gpuValues(), zOut.cpuValues(), 1e-6);
      cpu_->activationBackward(dOut.onCpu, zOut.onCpu, out.onCpu, rows, cols, act, dz.onCpu,
                               dBias.onCpu);
      gpu_->activationBackward(dOut.onGpu, zOut.onGpu, out.onGpu, rows, cols, act, dz.onGpu,
                               dBias.onGpu);
      EXPECT_CLOSE(dz.gpuValues(), dz.cpuValues(), 1e-5);
      EXPECT_CLOSE(dBias.gpuValues(), dBias.cpuValues(), 1e-5);
    }
  }

  void lossesMatchCpu() {
    SKIP_WITHOUT_GPU();
    const int64_t rows = 1000, classes = 10;
    std::vector<float> labelsHost(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      labelsHost[static_cast<std::size_t>(r)] = float(r * 7 % classes);
    Pair logits(*cpu_, *gpu_, randomVector(rows * classes, 7, 3.0f));
    Pair labels(*cpu_, *gpu_, labelsHost);
    Pair grad(*cpu_, *gpu_, std::vector<float>(static_cast<std::size_t>(rows * classes)));
    const LossResult onCpu =
        cpu_->softmaxCrossEntropy(logits.onCpu, labels.onCpu, rows, classes, 0.01f, grad.onCpu);
    const LossResult onGpu =
        gpu_->softmaxCrossEntropy(logits.onGpu, labels.onGpu, rows, classes, 0.01f, grad.onGpu);
    QVERIFY2(std::abs(onGpu.lossSum - onCpu.lossSum) <= 1e-4 * std::abs(onCpu.lossSum),
             qPrintable(QString("%1 vs %2").arg(onGpu.lossSum).arg(onCpu.lossSum)));
    QCOMPARE(onGpu.correct, onCpu.correct);
    QVERIFY(onCpu.correct > 0 && onCpu.correct < rows);  // the check can tell
    EXPECT_CLOSE(grad.gpuValues(), grad.cpuValues(), 1e-5);

    Pair target(*cpu_, *gpu_, randomVector(rows * 3, 8));
    Pair pred(*cpu_, *gpu_, randomVector(rows * 3, 9));
    Pair dPred(*cpu_, *gpu_, std::vector<float>(static_cast<std::size_t>(rows * 3)));
    const LossResult mseCpu =
        cpu_->meanSquaredError(pred.onCpu, target.onCpu, rows, 3, 0.5f, dPred.onCpu);
    const LossResult mseGpu =
        gpu_->meanSquaredError(pred.onGpu, target.onGpu, rows, 3, 0.5f, dPred.onGpu);
    QVERIFY(std::abs(mseGpu.lossSum - mseCpu.lossSum) <= 1e-4 * mseCpu.lossSum);
    EXPECT_CLOSE(dPred.gpuValues(), dPred.cpuValues(), 1e-6);
  }

  // Three steps of each optimizer on a range that starts and ends inside the buffer.
  void optimizersMatchCpu() {
    SKIP_WITHOUT_GPU();
    const int64_t n = 5000, begin = 17, end = 4990;
    std::vector<OptimizerConfig> configs(6);
    configs[0].momentum = 0.0f;
    configs[1].weightDecay = 0.01f;
    configs[2].nesterov = true;
    configs[3].kind = OptimizerKind::kAdam;
    configs[3].weightDecay = 0.01f;
    configs[4].kind = OptimizerKind::kAdamW;
    configs[4].weightDecay = 0.05f;
    configs[5].kind = OptimizerKind::kAdadelta;
    configs[5].lr = 1.0f;
    configs[5].eps = 1e-6f;
    for (const OptimizerConfig& config : configs) {
      Pair params(*cpu_, *gpu_, randomVector(n, 10));
      std::unique_ptr<Optimizer> onCpu = cpu_->makeOptimizer(config);
      std::unique_ptr<Optimizer> onGpu = gpu_->makeOptimizer(config);
      onCpu->init(n);
      onGpu->init(n);
      for (int64_t step = 1; step <= 3; ++step) {
        Pair grads(*cpu_, *gpu_, randomVector(n, 20 + static_cast<uint64_t>(step)));
        cpu_->optimizerUpdate(*onCpu, params.onCpu, grads.onCpu, begin, end, step, config.lr);
        gpu_->optimizerUpdate(*onGpu, params.onGpu, grads.onGpu, begin, end, step, config.lr);
      }
      const std::vector<float> before = randomVector(n, 10);
      const std::vector<float> after = params.cpuValues();
      QVERIFY(relative(after, before) > 1e-3);  // the optimizer moved the parameters
      QCOMPARE(after[0], before[0]);            // and only inside its range
      EXPECT_CLOSE(params.gpuValues(), after, 1e-5);
    }
  }

  // A whole training step of a 3-layer MLP: loss, every gradient, the parameters after one
  // SGD-momentum update.
  void trainingStepMatchesCpu() {
    SKIP_WITHOUT_GPU();
    const int64_t inputs = 64, rows = 256, classes = 10;
    ModelConfig model;
    model.hidden = {512, 256};
    model.activation = Activation::kGELU;
    const std::vector<LayerSpec> layers = mlpLayers(model, classes);
    std::vector<float> labelsHost(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) labelsHost[static_cast<std::size_t>(r)] = float(r % classes);
    Pair x(*cpu_, *gpu_, randomVector(rows * inputs, 30));
    Pair y(*cpu_, *gpu_, labelsHost);
    Mlp onCpu(*cpu_, inputs, layers);
    Mlp onGpu(*gpu_, inputs, layers);
    onCpu.initialize(InitScheme::kHe, 31);
    onGpu.initialize(InitScheme::kHe, 31);
    QCOMPARE(onGpu.paramsToHost(), onCpu.paramsToHost());

    LossResult loss[2];
    Mlp* mlps[2] = {&onCpu, &onGpu};
    Backend* backends[2] = {cpu_.get(), gpu_.get()};
    OptimizerConfig sgd;
    for (int i = 0; i < 2; ++i) {
      Mlp& mlp = *mlps[i];
      const float* xs = i == 0 ? x.onCpu : x.onGpu;
      const float* logits = mlp.forward(xs, rows);
      loss[i] = backends[i]->softmaxCrossEntropy(logits, i == 0 ? y.onCpu : y.onGpu, rows, classes,
                                                 1.0f / rows, mlp.outputGradBuffer());
      mlp.backward(xs, mlp.outputGradBuffer(), rows);
    }
    QVERIFY2(std::abs(loss[1].lossSum - loss[0].lossSum) <= 1e-4 * loss[0].lossSum,
             qPrintable(QString("%1 vs %2").arg(loss[1].lossSum).arg(loss[0].lossSum)));
    EXPECT_CLOSE(onGpu.gradsToHost(), onCpu.gradsToHost(), 1e-4);
    for (int i = 0; i < 2; ++i) {
      std::unique_ptr<Optimizer> optimizer = backends[i]->makeOptimizer(sgd);
      optimizer->init(mlps[i]->parameterCount());
      backends[i]->optimizerUpdate(*optimizer, mlps[i]->params(), mlps[i]->grads(), 0,
                                   mlps[i]->parameterCount(), 1, sgd.lr);
    }
    EXPECT_CLOSE(onGpu.paramsToHost(), onCpu.paramsToHost(), 1e-4);
  }
};

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "test_cuda_backend.moc"
