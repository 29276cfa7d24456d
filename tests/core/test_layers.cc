// Every layer of core/nn/layers.h against central finite differences on the CPU backend: the
// input gradient and each parameter's, relative error below 1e-3 in fp32. The loss is
// L = sum(y * r) for a fixed random r, summed in double on the host, and each difference is
// divided by the step the float parameter really took, so rounding in the loss does not mask
// an error in the layer.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/common/random.h"
#include "core/nn/layers.h"
#include "core/nn/sequential.h"
#include "core/optim/optimizer.h"

using namespace dtlab::core;

namespace {

// A layer on the CPU backend with host copies of its operands.
class Probe {
 public:
  Probe(std::unique_ptr<Layer> layer, int64_t rows, uint64_t seed)
      : backend_(1), layer_(std::move(layer)), rows_(rows) {
    Rng rng(seed);
    x_.resize(static_cast<std::size_t>(rows * layer_->inputSize()));
    for (float& v : x_) v = rng.normal();
    params_.assign(static_cast<std::size_t>(layer_->parameterCount()), 0.0f);
    Rng init(seed + 1);
    layer_->initialize(params_.data(), InitScheme::kXavier, init);
    // Nonzero biases: a zero bias leaves pre-activations exactly at ReLU's kink.
    for (const ParameterTensor& t : layer_->tensors())
      if (t.name.ends_with(".bias"))
        for (int64_t i = t.offset; i < t.offset + t.size(); ++i) params_[i] = 0.3f * rng.normal();
    r_.resize(static_cast<std::size_t>(rows * layer_->outputSize()));
    for (float& v : r_) v = rng.normal();
    layer_->reserve(backend_, rows);
    dX_ = backend_.allocate(rows * layer_->inputSize());
    dP_ = backend_.allocate(std::max<int64_t>(1, layer_->parameterCount()));
    dY_ = backend_.allocate(rows * layer_->outputSize());
    y_ = backend_.allocate(rows * layer_->outputSize());
  }
  ~Probe() {
    layer_->release(backend_);
    for (float* p : {dX_, dP_, dY_, y_}) backend_.release(p);
  }

  std::vector<float>& x() { return x_; }
  std::vector<float>& params() { return params_; }
  const Layer& layer() const { return *layer_; }

  double loss() {
    layer_->forward(backend_, params_.data(), x_.data(), y_, rows_);
    double sum = 0.0;
    for (std::size_t i = 0; i < r_.size(); ++i) sum += static_cast<double>(y_[i]) * r_[i];
    return sum;
  }

  // The analytic gradients of loss(): {input, parameters}.
  std::pair<std::vector<float>, std::vector<float>> gradients() {
    loss();
    std::copy(r_.begin(), r_.end(), dY_);
    layer_->backward(backend_, params_.data(), x_.data(), y_, dY_, dX_, dP_, rows_);
    return {std::vector<float>(dX_, dX_ + x_.size()),
            std::vector<float>(dP_, dP_ + params_.size())};
  }

 private:
  CpuBackend backend_;
  std::unique_ptr<Layer> layer_;
  int64_t rows_;
  std::vector<float> x_, params_, r_;
  float *dX_ = nullptr, *dP_ = nullptr, *dY_ = nullptr, *y_ = nullptr;
};

// The largest error of `analytic` against central differences of probe.loss() over `values`,
// relative to the larger of the numeric gradient's magnitude and its RMS over the tensor (so a
// near-zero entry is judged on the tensor's scale, not on its own).
double maxRelativeError(Probe& probe, std::vector<float>& values,
                        const std::vector<float>& analytic, float h) {
  std::vector<double> numeric(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = saved + h;
    const double up = values[i];
    const double plus = probe.loss();
    values[i] = saved - h;
    const double down = values[i];
    const double minus = probe.loss();
    values[i] = saved;
    numeric[i] = (plus - minus) / (up - down);
  }
  double squares = 0.0;
  for (double n : numeric) squares += n * n;
  const double rms =
      std::sqrt(squares / static_cast<double>(std::max<std::size_t>(1, numeric.size())));
  double worst = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double scale = std::max({std::abs(numeric[i]), rms, 1e-6});
    worst = std::max(worst, std::abs(numeric[i] - analytic[i]) / scale);
  }
  return worst;
}

void checkLayer(std::unique_ptr<Layer> layer, int64_t rows, float h, uint64_t seed = 5) {
  Probe probe(std::move(layer), rows, seed);
  const auto [dx, dp] = probe.gradients();
  const double inputError = maxRelativeError(probe, probe.x(), dx, h);
  QVERIFY2(inputError < 1e-3, qPrintable(QString("%1: input gradient off by %2")
                                             .arg(QString::fromStdString(probe.layer().name()))
                                             .arg(inputError)));
  if (!probe.params().empty()) {
    const double paramError = maxRelativeError(probe, probe.params(), dp, h);
    QVERIFY2(paramError < 1e-3, qPrintable(QString("%1: parameter gradient off by %2")
                                               .arg(QString::fromStdString(probe.layer().name()))
                                               .arg(paramError)));
  }
}

std::optional<Activation> activationFrom(int code) {
  if (code < 0) return std::nullopt;
  return static_cast<Activation>(code);
}

}  // namespace

class TestLayers : public QObject {
  Q_OBJECT
 private slots:
  void convolution_data() {
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("padding");
    QTest::addColumn<int>("activation");  // -1: none
    QTest::newRow("3x3, same size") << 2 << 6 << 3 << 3 << 1 << 1 << -1;
    QTest::newRow("3x3, stride 2") << 3 << 7 << 2 << 3 << 2 << 1 << -1;
    QTest::newRow("5x5, padding 2, tanh") << 1 << 8 << 4 << 5 << 1 << 2 << int(Activation::kTanh);
    QTest::newRow("1x1, gelu") << 4 << 5 << 3 << 1 << 1 << 0 << int(Activation::kGELU);
    QTest::newRow("3x3, no padding, relu") << 2 << 6 << 3 << 3 << 1 << 0 << int(Activation::kReLU);
  }
  void convolution() {
    QFETCH(int, channels);
    QFETCH(int, side);
    QFETCH(int, out);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(int, padding);
    QFETCH(int, activation);
    // ReLU's kink: a smaller step keeps pre-activations on their side of zero.
    const float h = activation == int(Activation::kReLU) ? 1e-3f : 1e-2f;
    checkLayer(
        std::make_unique<Conv2dLayer>("conv", std::vector<int64_t>{channels, side, side}, out,
                                      kernel, stride, padding, activationFrom(activation)),
        3, h);
  }

  void convolutionWithPooling_data() {
    QTest::addColumn<int>("pool");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("side");
    QTest::newRow("average, tanh (folded into the pooling's backward)")
        << int(PoolKind::kAverage) << int(Activation::kTanh) << 6;
    QTest::newRow("average, gelu (its own pass), odd side")
        << int(PoolKind::kAverage) << int(Activation::kGELU) << 7;
    QTest::newRow("average, no activation") << int(PoolKind::kAverage) << -1 << 6;
  }
  void convolutionWithPooling() {
    // The maximum's kinks are everywhere once a weight moves every pixel of a channel; it is
    // checked alone (pooling, below) and against the unfused passes (foldedActivation).
    QFETCH(int, pool);
    QFETCH(int, activation);
    QFETCH(int, side);
    checkLayer(
        std::make_unique<Conv2dLayer>("conv", std::vector<int64_t>{2, side, side}, 3, 3, 1, 1,
                                      activationFrom(activation), static_cast<PoolKind>(pool)),
        3, 1e-2f);
  }

  // Pooling's backward with the activation folded in equals the pooling's backward and then
  // the activation's, for tiling windows (one pass) and overlapping ones.
  void foldedActivation_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("window");
    QTest::addColumn<int>("stride");
    for (const auto& [kind, kindName] :
         {std::pair{PoolKind::kMax, "max"}, std::pair{PoolKind::kAverage, "average"}})
      for (const auto& [act, actName] :
           {std::pair{Activation::kReLU, "relu"}, std::pair{Activation::kTanh, "tanh"}}) {
        QTest::addRow("%s, %s, 2x2 tiles", kindName, actName) << int(kind) << int(act) << 2 << 2;
        QTest::addRow("%s, %s, 3x3 stride 2", kindName, actName) << int(kind) << int(act) << 3 << 2;
        QTest::addRow("%s, %s, 3x3 tiles", kindName, actName) << int(kind) << int(act) << 3 << 3;
      }
  }
  void foldedActivation() {
    QFETCH(int, kind);
    QFETCH(int, activation);
    QFETCH(int, window);
    QFETCH(int, stride);
    CpuBackend backend(2);
    const auto act = static_cast<Activation>(activation);
    Pool2dShape s{.kind = static_cast<PoolKind>(kind),
                  .batch = 3,
                  .channels = 4,
                  .height = 9,
                  .width = 9,
                  .kernel = window,
                  .stride = stride};
    const int64_t in = s.batch * s.channels * s.height * s.width;
    const int64_t out = s.batch * s.channels * s.outHeight() * s.outWidth();
    Rng rng(3);
    std::vector<float> z(static_cast<std::size_t>(in)), a(z.size()),
        y(static_cast<std::size_t>(out)), dy(y.size()), unfused(z.size()), folded(z.size(), 7.0f);
    for (float& v : z) v = rng.normal();
    for (float& v : dy) v = rng.normal();
    const std::vector<float> zeroBias(z.size() / static_cast<std::size_t>(s.batch), 0.0f);
    backend.biasActivation(z.data(), zeroBias.data(), s.batch, in / s.batch, act, a.data(),
                           nullptr);
    backend.pool2dForward(s, a.data(), y.data());
    backend.pool2dBackward(s, a.data(), y.data(), dy.data(), unfused.data());
    backend.activationBackward(unfused.data(), nullptr, a.data(), s.batch, in / s.batch, act,
                               unfused.data(), nullptr);
    s.inputActivation = act;
    backend.pool2dBackward(s, a.data(), y.data(), dy.data(), folded.data());
    for (std::size_t i = 0; i < z.size(); ++i)
      QVERIFY2(
          std::abs(folded[i] - unfused[i]) <= 1e-6f * (1.0f + std::abs(unfused[i])),
          qPrintable(
              QString("pixel %1: folded %2, unfused %3").arg(i).arg(folded[i]).arg(unfused[i])));
  }

  void pooling_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("window");
    QTest::addColumn<int>("stride");
    QTest::newRow("max 2x2") << int(PoolKind::kMax) << 6 << 2 << 2;
    QTest::newRow("max 3x3 stride 2 (overlapping, odd side)") << int(PoolKind::kMax) << 7 << 3 << 2;
    QTest::newRow("average 2x2") << int(PoolKind::kAverage) << 6 << 2 << 2;
    QTest::newRow("max 3x3 tiles, a row and a column left over")
        << int(PoolKind::kMax) << 7 << 3 << 3;
    QTest::newRow("max 2x2, odd side") << int(PoolKind::kMax) << 7 << 2 << 2;
    QTest::newRow("average 3x3 stride 1") << int(PoolKind::kAverage) << 5 << 3 << 1;
  }
  void pooling() {
    QFETCH(int, kind);
    QFETCH(int, side);
    QFETCH(int, window);
    QFETCH(int, stride);
    // A maximum moves only when a step crosses another pixel of its window: steps far below
    // the gaps between normal samples.
    const float h = kind == int(PoolKind::kMax) ? 1e-4f : 1e-2f;
    checkLayer(std::make_unique<Pool2dLayer>("pool", std::vector<int64_t>{3, side, side},
                                             static_cast<PoolKind>(kind), window, stride),
               2, h);
  }

  void convolutionsOfManyBatchSizes() {
    // The backend keeps the primitives of a few shapes (a rebalanced run's local batch moves):
    // more batch sizes than it keeps, then the first again (its primitives made anew), give
    // the same output bit for bit.
    CpuBackend backend(2);
    Conv2dShape s{.batch = 3, .inChannels = 2, .height = 6, .width = 6, .outChannels = 4};
    Rng rng(5);
    std::vector<float> x(static_cast<std::size_t>(12 * 2 * 36)),
        w(static_cast<std::size_t>(4 * 2 * 9));
    for (float& v : x) v = rng.normal();
    for (float& v : w) v = rng.normal();
    std::vector<float> first(static_cast<std::size_t>(12 * 4 * 36)), again(first.size());
    backend.conv2dForward(s, x.data(), w.data(), nullptr, first.data());
    for (int64_t batch = 1; batch <= 12; ++batch) {
      Conv2dShape other = s;
      other.batch = batch;
      backend.conv2dForward(other, x.data(), w.data(), nullptr, again.data());
      // Each image's output is its own: the first three agree with the first call's (to
      // rounding: another batch may be blocked differently).
      for (std::size_t i = 0; i < static_cast<std::size_t>(std::min<int64_t>(batch, 3) * 4 * 36);
           ++i)
        QVERIFY(std::abs(again[i] - first[i]) <= 1e-5f * (1.0f + std::abs(first[i])));
    }
    backend.conv2dForward(s, x.data(), w.data(), nullptr, again.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(3 * 4 * 36); ++i)
      QCOMPARE(again[i], first[i]);
  }

  void paddedPoolingAveragesOnlyTheImage() {
    // The backend's pooling with padding (the layers use none): a window over the border
    // averages the pixels inside, and its gradient goes to them alone.
    CpuBackend backend(1);
    const Pool2dShape s{.kind = PoolKind::kAverage,
                        .batch = 1,
                        .channels = 1,
                        .height = 2,
                        .width = 2,
                        .kernel = 2,
                        .stride = 1,
                        .padding = 1};
    QCOMPARE(s.outHeight(), int64_t{3});
    const std::vector<float> x = {1, 2, 3, 4};
    std::vector<float> y(9), dy(9, 1.0f), dx(4);
    backend.pool2dForward(s, x.data(), y.data());
    QCOMPARE(y, (std::vector<float>{1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}));
    backend.pool2dBackward(s, x.data(), y.data(), dy.data(), dx.data());
    // Pixel 0 is in the windows of outputs 0 (alone), 1 and 3 (with one other), 4 (of four).
    QCOMPARE(dx[0], 1.0f + 0.5f + 0.5f + 0.25f);
    Pool2dShape max = s;
    max.kind = PoolKind::kMax;
    backend.pool2dForward(max, x.data(), y.data());
    QCOMPARE(y, (std::vector<float>{1, 2, 2, 3, 4, 4, 3, 4, 4}));
  }

  void dense_data() {
    QTest::addColumn<int>("activation");
    QTest::newRow("none") << -1;
    QTest::newRow("gelu") << int(Activation::kGELU);
    QTest::newRow("tanh") << int(Activation::kTanh);
  }
  void dense() {
    QFETCH(int, activation);
    checkLayer(std::make_unique<DenseLayer>("dense", 7, 5, activationFrom(activation)), 4, 1e-2f);
  }

  void aBackendWithoutTheLayerSaysSo() {
    // The defaults a backend without convolutions keeps: refused, naming the backend.
    class Bare final : public Backend {
     public:
      std::string name() const override { return "bare"; }
      int threads() const override { return 1; }
      float* allocate(int64_t) override { return nullptr; }
      void release(float*) noexcept override {}
      void upload(float*, const float*, int64_t) override {}
      void download(float*, const float*, int64_t) override {}
      void fill(float*, int64_t, float) override {}
      void gatherRows(const float*, int64_t, std::span<const int64_t>, float*) override {}
      void gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                int64_t, float, float*, int64_t) override {}
      void biasActivation(const float*, const float*, int64_t, int64_t, std::optional<Activation>,
                          float*, float*) override {}
      void activationBackward(const float*, const float*, const float*, int64_t, int64_t,
                              std::optional<Activation>, float*, float*) override {}
      LossResult softmaxCrossEntropy(const float*, const float*, int64_t, int64_t, float,
                                     float*) override {
        return {};
      }
      LossResult meanSquaredError(const float*, const float*, int64_t, int64_t, float,
                                  float*) override {
        return {};
      }
      std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig&) override { return nullptr; }
      void optimizerUpdate(Optimizer&, float*, const float*, int64_t, int64_t, int64_t,
                           float) override {}
    } bare;
    try {
      bare.conv2dForward(Conv2dShape{}, nullptr, nullptr, nullptr, nullptr);
      QFAIL("a backend without convolutions ran one");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find("the bare backend has no 2-D convolution") !=
                   std::string::npos,
               e.what());
    }
    // A model with such a layer is refused when it is built, before any step.
    std::vector<std::unique_ptr<Layer>> layers;
    layers.push_back(std::make_unique<Pool2dLayer>("pool0", std::vector<int64_t>{1, 4, 4},
                                                   PoolKind::kMax, 2, 2));
    layers.push_back(std::make_unique<DenseLayer>("dense0", 4, 2, std::nullopt));
    try {
      SequentialModel model(bare, std::move(layers));
      QFAIL("a model with pooling was built on a backend without it");
    } catch (const dtlab::Error& e) {
      QVERIFY2(
          std::string(e.what()).find("the bare backend has no 2-D pooling") != std::string::npos,
          e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestLayers)
#include "test_layers.moc"
