// Finite-difference gradient checks of every layer kind and loss, and the
// MLP's buffers and initialisation.
#include <QtTest/QtTest>

#include <cmath>
#include <utility>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/backend/cpu_math.h"
#include "core/backend/small_gemm.h"
#include "core/common/random.h"
#include "core/nn/mlp.h"

using namespace dtlab::core;

namespace {

struct Problem {
  int64_t rows = 5;
  std::vector<float> x;
  std::vector<float> labels;
};

Problem makeProblem(int64_t rows, int64_t inputs, int64_t outputs, bool regression, uint64_t seed) {
  Problem p;
  p.rows = rows;
  Rng rng(seed);
  for (int64_t i = 0; i < rows * inputs; ++i) p.x.push_back(rng.normal());
  for (int64_t i = 0; i < rows * (regression ? outputs : 1); ++i)
    p.labels.push_back(regression ? rng.normal() : static_cast<float>(rng.below(outputs)));
  return p;
}

// Loss summed over the batch (gradScale 1), and optionally its gradient in the model.
double lossAndGrad(Backend& backend, Mlp& mlp, const Problem& p, LossKind loss, bool backward) {
  float* x = backend.allocate(static_cast<int64_t>(p.x.size()));
  float* y = backend.allocate(static_cast<int64_t>(p.labels.size()));
  backend.upload(x, p.x.data(), static_cast<int64_t>(p.x.size()));
  backend.upload(y, p.labels.data(), static_cast<int64_t>(p.labels.size()));
  const float* out = mlp.forward(x, p.rows);
  float* dOut = backward ? mlp.outputGradBuffer() : nullptr;
  const LossResult r = loss == LossKind::kCrossEntropy
                           ? backend.softmaxCrossEntropy(out, y, p.rows, mlp.outputs(), 1.0f, dOut)
                           : backend.meanSquaredError(out, y, p.rows, mlp.outputs(), 2.0f, dOut);
  if (backward) mlp.backward(x, dOut, p.rows);
  backend.release(x);
  backend.release(y);
  return r.lossSum;
}

// Central differences in float need a step large enough to beat rounding (the
// loss is a sum of a few float terms) and small enough for curvature; compare with
// a tolerance scaled to the gradient's magnitude.
void checkGradients(const std::vector<LayerSpec>& layers, LossKind loss, int64_t inputs,
                    int64_t outputs, uint64_t seed, float h = 1e-2f, std::size_t every = 1) {
  CpuBackend backend(1);
  Mlp mlp(backend, inputs, layers);
  mlp.initialize(InitScheme::kXavier, seed);
  // Nonzero biases: with zero biases a row whose ReLU inputs are all dead has a
  // pre-activation of exactly 0, ReLU's kink, where no finite difference agrees.
  std::vector<float> start = mlp.paramsToHost();
  Rng biasRng(seed + 7);
  for (const ParamRange& r : mlp.denseLayers())
    for (int64_t j = r.bias; j < r.end(); ++j) start[j] = 0.3f * biasRng.normal();
  mlp.setParams(start);
  const Problem p = makeProblem(6, inputs, outputs, loss == LossKind::kMse, seed + 1);
  lossAndGrad(backend, mlp, p, loss, true);
  const std::vector<float> analytic = mlp.gradsToHost();
  std::vector<float> params = mlp.paramsToHost();
  double maxError = 0.0;
  for (std::size_t i = 0; i < params.size(); i += every) {
    const float saved = params[i];
    params[i] = saved + h;
    mlp.setParams(params);
    const double plus = lossAndGrad(backend, mlp, p, loss, false);
    params[i] = saved - h;
    mlp.setParams(params);
    const double minus = lossAndGrad(backend, mlp, p, loss, false);
    params[i] = saved;
    const double numeric = (plus - minus) / (2.0 * h);
    const double error = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    maxError = std::max(maxError, error);
    if (error > 2e-2) {
      QFAIL(qPrintable(
          QString("parameter %1: analytic %2, numeric %3").arg(i).arg(analytic[i]).arg(numeric)));
    }
  }
  mlp.setParams(params);
  QVERIFY(maxError < 2e-2);
}

}  // namespace

class TestNn : public QObject {
  Q_OBJECT
 private slots:
  void denseGradients_data() {
    QTest::addColumn<int>("loss");
    QTest::newRow("cross_entropy") << static_cast<int>(LossKind::kCrossEntropy);
    QTest::newRow("mse") << static_cast<int>(LossKind::kMse);
  }
  void denseGradients() {
    QFETCH(int, loss);
    checkGradients({LayerSpec::dense(3)}, static_cast<LossKind>(loss), 4, 3, 11);
  }

  void activationGradients_data() {
    QTest::addColumn<int>("activation");
    QTest::newRow("relu") << static_cast<int>(Activation::kReLU);
    QTest::newRow("gelu") << static_cast<int>(Activation::kGELU);
    QTest::newRow("tanh") << static_cast<int>(Activation::kTanh);
  }
  void activationGradients() {
    QFETCH(int, activation);
    const auto act = static_cast<Activation>(activation);
    // ReLU's kink: a step of 1e-2 moves some pre-activations across zero, so use a
    // smaller one (float rounding still stays far below the tolerance).
    const float h = act == Activation::kReLU ? 1e-3f : 1e-2f;
    // Two hidden layers, so the activation's backward feeds a weight gradient and an
    // input gradient of the layer below it.
    checkGradients({LayerSpec::dense(7), LayerSpec::act(act), LayerSpec::dense(5),
                    LayerSpec::act(act), LayerSpec::dense(3)},
                   LossKind::kCrossEntropy, 4, 3, 21, h);
    checkGradients({LayerSpec::dense(6), LayerSpec::act(act), LayerSpec::dense(2)}, LossKind::kMse,
                   3, 2, 31, h);
  }

  void loneActivationStage() {
    // An activation that does not follow a dense layer (here: two in a row) runs as
    // its own stage.
    checkGradients({LayerSpec::dense(6), LayerSpec::act(Activation::kTanh),
                    LayerSpec::act(Activation::kGELU), LayerSpec::dense(3)},
                   LossKind::kCrossEntropy, 4, 3, 41);
  }

  // Backward hands its gradients over in the order handOffs() lists, and they tile the
  // parameters: last layer first; the first layer's weights (computed last) in shrinking
  // pieces once they are large (here 256 x 1024 floats, 1 MiB), in one piece when small.
  void gradientsHandedOverInPieces() {
    struct Recorder : GradientListener {
      std::vector<GradientRange> seen;
      void onGradientsReady(int64_t begin, int64_t end) override { seen.push_back({begin, end}); }
    };
    CpuBackend backend(1);
    const std::vector<LayerSpec> layers{LayerSpec::dense(1024), LayerSpec::act(Activation::kTanh),
                                        LayerSpec::dense(10)};
    Mlp mlp(backend, 256, layers);
    const std::vector<GradientRange>& handOffs = mlp.handOffs();
    const ParamRange first = mlp.denseLayers()[0];
    const ParamRange last = mlp.denseLayers()[1];
    const std::vector<GradientRange> expected{
        {last.weight, last.end()},
        {first.weight, first.weight + 128 * 1024},
        {first.weight + 128 * 1024, first.weight + 192 * 1024},
        {first.weight + 192 * 1024, first.weight + 224 * 1024},
        {first.weight + 224 * 1024, first.end()}};
    QVERIFY(handOffs == expected);
    mlp.initialize(InitScheme::kXavier, 3);
    const Problem p = makeProblem(4, 256, 10, false, 5);
    float* x = backend.allocate(4 * 256);
    backend.upload(x, p.x.data(), 4 * 256);
    mlp.forward(x, 4);
    Recorder recorder;
    mlp.backward(x, mlp.outputGradBuffer(), 4, &recorder);
    backend.release(x);
    QVERIFY(recorder.seen == expected);

    Mlp small(backend, 2,
              {LayerSpec::dense(64), LayerSpec::act(Activation::kReLU), LayerSpec::dense(64),
               LayerSpec::act(Activation::kReLU), LayerSpec::dense(2)});
    QCOMPARE(static_cast<int>(small.handOffs().size()), 3);
    QCOMPARE(small.handOffs().back().begin, int64_t{0});
    QCOMPARE(small.handOffs().front().end, small.parameterCount());
  }

  // The pieces compute the same gradient as one GEMM would: finite differences on every
  // 499th parameter of the pieced model above (all pieces and both layers are sampled).
  void piecedGradientsAreCorrect() {
    checkGradients(
        {LayerSpec::dense(1024), LayerSpec::act(Activation::kTanh), LayerSpec::dense(10)},
        LossKind::kCrossEntropy, 256, 10, 51, 1e-2f, 499);
  }

  void fastMathMatchesLibm() {
    double expRel = 0.0, erfAbs = 0.0, tanhAbs = 0.0, tanhRel = 0.0;
    for (int i = -1200000; i <= 1200000; ++i) {
      const float x = static_cast<float>(i) * 1e-5f;  // [-12, 12] in steps of 1e-5
      const double e = std::exp(static_cast<double>(x));
      expRel = std::max(expRel, std::abs(dtlab::core::fastmath::exp(x) - e) / e);
      erfAbs = std::max(erfAbs, std::abs(dtlab::core::fastmath::erf(x) - std::erf(double(x))));
      const double t = std::tanh(static_cast<double>(x));
      const double dt = std::abs(dtlab::core::fastmath::tanh(x) - t);
      tanhAbs = std::max(tanhAbs, dt);
      if (x != 0.0f) tanhRel = std::max(tanhRel, dt / std::abs(t));
    }
    QVERIFY2(expRel < 5e-7, qPrintable(QString::number(expRel)));
    QVERIFY2(erfAbs < 8e-7, qPrintable(QString::number(erfAbs)));
    QVERIFY2(tanhAbs < 3e-7, qPrintable(QString::number(tanhAbs)));
    QVERIFY2(tanhRel < 2e-6, qPrintable(QString::number(tanhRel)));
    // The clamps keep the extremes finite and exact in the limit.
    QCOMPARE(dtlab::core::fastmath::tanh(50.0f), 1.0f);
    QCOMPARE(dtlab::core::fastmath::erf(-9.0f), -1.0f);
    QVERIFY(std::isfinite(dtlab::core::fastmath::exp(1000.0f)));
    QVERIFY(dtlab::core::fastmath::exp(-1000.0f) >= 0.0f);
  }

  void lossValues() {
    CpuBackend backend(1);
    // Cross-entropy of logits (1, 2, 3) with label 2: log(e^1+e^2+e^3) - 3.
    const float logits[] = {1, 2, 3, 0, 0, 5};
    const float labels[] = {2, 0};
    float grad[6];
    const LossResult r = backend.softmaxCrossEntropy(logits, labels, 2, 3, 0.5f, grad);
    const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
    const double l1 = std::log(2.0 + std::exp(5.0)) - 0.0;
    QVERIFY(std::abs(r.lossSum - (l0 + l1)) < 1e-5);
    QCOMPARE(r.correct, int64_t{1});  // row 0 right (argmax 2), row 1 wrong (argmax 2 != 0)
    const double softmax2 = std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    QVERIFY(std::abs(grad[2] - 0.5 * (softmax2 - 1.0)) < 1e-6);
    const float pred[] = {1.0f, 3.0f};
    const float target[] = {0.0f, 1.0f};
    float dPred[2];
    const LossResult m = backend.meanSquaredError(pred, target, 2, 1, 1.0f, dPred);
    QCOMPARE(m.lossSum, 5.0);
    QCOMPARE(dPred[1], 2.0f);
  }

  void initialisationScales() {
    CpuBackend backend(1);
    Mlp mlp(backend, 512,
            {LayerSpec::dense(256), LayerSpec::act(Activation::kReLU), LayerSpec::dense(10)});
    QCOMPARE(mlp.parameterCount(), int64_t{512 * 256 + 256 + 256 * 10 + 10});
    mlp.initialize(InitScheme::kHe, 5);
    std::vector<float> p = mlp.paramsToHost();
    double sq = 0.0;
    for (int64_t i = 0; i < 512 * 256; ++i) sq += p[i] * p[i];
    const double var = sq / (512.0 * 256.0);
    QVERIFY(std::abs(var - 2.0 / 512.0) < 0.05 * 2.0 / 512.0);
    for (int64_t i = 512 * 256; i < 512 * 256 + 256; ++i) QCOMPARE(p[i], 0.0f);
    mlp.initialize(InitScheme::kXavier, 5);
    p = mlp.paramsToHost();
    const float bound = std::sqrt(6.0f / (512 + 256));
    float maxAbs = 0.0f;
    for (int64_t i = 0; i < 512 * 256; ++i) maxAbs = std::max(maxAbs, std::abs(p[i]));
    QVERIFY(maxAbs <= bound && maxAbs > 0.95f * bound);
    // Same seed, same weights; another seed, other weights.
    Mlp again(backend, 512,
              {LayerSpec::dense(256), LayerSpec::act(Activation::kReLU), LayerSpec::dense(10)});
    again.initialize(InitScheme::kXavier, 5);
    QCOMPARE(paramChecksum(again.paramsToHost()), paramChecksum(p));
    again.initialize(InitScheme::kXavier, 6);
    QVERIFY(paramChecksum(again.paramsToHost()) != paramChecksum(p));
  }

  void gemmOnEveryThreadIsExact_data() {
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    // Split by rows (m >= n) and by columns, sizes that are no multiple of the 16-wide
    // slices, and one thread (the library's own path) for comparison.
    QTest::newRow("rows, 2 threads") << 2 << 131 << 97 << 300;
    QTest::newRow("columns, 2 threads") << 2 << 40 << 301 << 200;
    QTest::newRow("rows, 3 threads") << 3 << 67 << 50 << 400;
    QTest::newRow("one thread") << 1 << 131 << 97 << 300;
    // Narrow C (an output layer: narrowGemm): rows and k that are no multiple of a lane
    // group, k shorter than one (the library takes A * B then), one column, eight.
    QTest::newRow("narrow, 2 columns") << 1 << 64 << 2 << 64;
    QTest::newRow("narrow, 1 column, tails") << 1 << 37 << 1 << 19;
    QTest::newRow("narrow, 8 columns, short k") << 2 << 100 << 8 << 3;
    QTest::newRow("narrow, 5 columns, long k") << 1 << 9 << 5 << 1000;
    QTest::newRow("small A * B^T (B transposed)") << 1 << 64 << 64 << 64;
    QTest::newRow("small A * B^T, tile edges") << 1 << 40 << 50 << 70;
  }
  void gemmOnEveryThreadIsExact() {
    QFETCH(int, threads);
    QFETCH(int, m);
    QFETCH(int, n);
    QFETCH(int, k);
    CpuBackend backend(threads);
    Rng rng(5);
    // Each shape with alpha and beta (the library's paths) and as the model calls it, C = A B
    // (every path; C's old values are NaN there, which must never be read).
    for (const auto& [alpha, beta] : {std::pair{0.5f, 0.25f}, std::pair{1.0f, 0.0f}}) {
      for (bool transA : {false, true}) {
        for (bool transB : {false, true}) {
          // Leading dimensions wider than the matrices: the slices must follow them, except
          // in the model's case (plain strides: the matmul primitive takes A B^T then).
          const int64_t pad = beta == 0.0f && transB && !transA ? 0 : 1;
          const int64_t lda = (transA ? m : k) + 3 * pad, ldb = (transB ? k : n) + 5 * pad,
                        ldc = n + 7 * pad;
          std::vector<float> a(static_cast<std::size_t>((transA ? k : m) * lda));
          std::vector<float> b(static_cast<std::size_t>((transB ? n : k) * ldb));
          std::vector<float> c(static_cast<std::size_t>(m * ldc));
          for (float& v : a) v = rng.uniform() * 2.0f - 1.0f;
          for (float& v : b) v = rng.uniform() * 2.0f - 1.0f;
          for (float& v : c) v = beta == 0.0f ? std::nanf("") : rng.uniform() * 2.0f - 1.0f;
          const std::vector<float> before = c;
          backend.gemm(transA, transB, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(),
                       ldc);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < ldc; ++j) {
              const std::size_t at = static_cast<std::size_t>(i * ldc + j);
              if (j >= n) {  // outside C: untouched
                QVERIFY(std::isnan(before[at]) ? std::isnan(c[at]) : c[at] == before[at]);
                continue;
              }
              double sum = 0.0;
              for (int64_t p = 0; p < k; ++p)
                sum += static_cast<double>(transA ? a[static_cast<std::size_t>(p * lda + i)]
                                                  : a[static_cast<std::size_t>(i * lda + p)]) *
                       (transB ? b[static_cast<std::size_t>(j * ldb + p)]
                               : b[static_cast<std::size_t>(p * ldb + j)]);
              const double expected =
                  alpha * sum + (beta == 0.0f ? 0.0 : beta * static_cast<double>(before[at]));
              if (std::abs(c[at] - expected) > 1e-4 * std::max(1.0, std::abs(expected)))
                QFAIL(qPrintable(QString("C[%1][%2] = %3, expected %4 (transA %5, transB %6)")
                                     .arg(i)
                                     .arg(j)
                                     .arg(c[at])
                                     .arg(expected)
                                     .arg(transA)
                                     .arg(transB)));
            }
          }
        }
      }
    }
  }

  void narrowGemmRowsDoNotDependOnTheirCount() {
    // An output layer's product for a batch and for its first rows alone (a worker's smaller
    // share): the shared rows' values are identical, bit for bit.
    Rng rng(11);
    const int64_t k = 70, n = 3;
    for (bool transA : {false, true}) {
      for (int64_t m : {64, 17}) {
        std::vector<float> a(static_cast<std::size_t>(64 * k)), b(static_cast<std::size_t>(k * n));
        for (float& v : a) v = rng.uniform() * 2.0f - 1.0f;
        for (float& v : b) v = rng.uniform() * 2.0f - 1.0f;
        std::vector<float> all(static_cast<std::size_t>(64 * n)), part(all.size());
        // A^T's first m columns of 64 are rows [0, m) of op(A) with the same lda.
        QVERIFY(narrowGemm(transA, false, 64, n, k, a.data(), transA ? 64 : k, b.data(), n,
                           all.data(), n));
        QVERIFY(narrowGemm(transA, false, m, n, k, a.data(), transA ? 64 : k, b.data(), n,
                           part.data(), n));
        for (int64_t i = 0; i < m * n; ++i)
          QCOMPARE(part[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(i)]);
      }
    }
    // Shapes it does not serve are refused untouched.
    std::vector<float> a(64 * 64, 1.0f), b(64 * 9, 1.0f), c(64 * 9, 7.0f);
    QVERIFY(!narrowGemm(false, false, 64, 9, 64, a.data(), 64, b.data(), 9, c.data(), 9));
    QVERIFY(!narrowGemm(false, false, 64, 2, 4, a.data(), 4, b.data(), 2, c.data(), 2));
    QCOMPARE(c[0], 7.0f);
  }

  void threadedKernelsMatchSingleThread() {
    // Large enough to take the parallel paths; results must not depend on threads
    // (column-split bias gradients and row-split activations do no reordering).
    const int64_t rows = 256, inputs = 64, hidden = 512;
    std::vector<std::string> sums;
    for (int threads : {1, 2}) {
      CpuBackend backend(threads);
      Mlp mlp(backend, inputs,
              {LayerSpec::dense(hidden), LayerSpec::act(Activation::kGELU), LayerSpec::dense(10)});
      mlp.initialize(InitScheme::kHe, 9);
      const Problem p = makeProblem(rows, inputs, 10, false, 3);
      lossAndGrad(backend, mlp, p, LossKind::kCrossEntropy, true);
      std::vector<float> g = mlp.gradsToHost();
      // Only the bias gradients and activations are ours; GEMM results may differ by
      // the library's blocking, so compare the first layer's bias gradient bitwise.
      const ParamRange& first = mlp.denseLayers()[0];
      sums.push_back(
          paramChecksum(std::vector<float>(g.begin() + first.bias, g.begin() + first.end())));
    }
    QCOMPARE(sums[0], sums[1]);
  }
};

QTEST_APPLESS_MAIN(TestNn)
#include "test_nn.moc"
