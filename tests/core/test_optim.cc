#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/spec/experiment_spec.h"

using dtlab::core::LrSchedule;
using dtlab::core::makeOptimizer;
using dtlab::core::Optimizer;
using dtlab::core::OptimizerConfig;
using dtlab::core::OptimizerKind;
using dtlab::core::Rng;
using dtlab::core::ScheduleKind;

namespace {

bool near(double actual, double expected, double tolerance) {
  return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

#define EXPECT_NEAR(actual, expected, tolerance)           \
  QVERIFY2(near((actual), (expected), (tolerance)),        \
           qPrintable(QString("%1 = %2, expected %3")      \
                          .arg(#actual)                    \
                          .arg(double(actual), 0, 'g', 10) \
                          .arg(double(expected), 0, 'g', 10)))

OptimizerConfig config(OptimizerKind kind, float lr) {
  OptimizerConfig c;
  c.kind = kind;
  c.lr = lr;
  return c;
}

// Runs one scalar parameter (p0 = 1) through the gradients 1, 0.5, -1 and returns p
// after each step. The gradient does not depend on p, so the hand computations in the
// tests below only need the update rule.
std::vector<float> scalarTrajectory(const OptimizerConfig& c) {
  auto opt = makeOptimizer(c);
  opt->init(1);
  float p = 1.0f;
  const float grads[] = {1.0f, 0.5f, -1.0f};
  std::vector<float> out;
  for (int64_t t = 1; t <= 3; ++t) {
    opt->update(&p, &grads[t - 1], 0, 1, t, c.lr);
    out.push_back(p);
  }
  return out;
}

// Independent double-precision reference written from the papers' / torch docs'
// textbook form (bias-corrected m-hat and v-hat, explicit p -= lr * ...), not in the
// kernels' operation order.
struct Reference {
  OptimizerConfig c;
  double eps;
  std::vector<double> p, a, b;  // a, b: momentum | m, v | square_avg, acc_delta

  Reference(const OptimizerConfig& config, double epsilon, const std::vector<float>& params)
      : c(config), eps(epsilon), p(params.begin(), params.end()), a(p.size()), b(p.size()) {}

  void step(const std::vector<float>& grads, int64_t t, double lr) {
    const double wd = c.weightDecay;
    for (std::size_t i = 0; i < p.size(); ++i) {
      double g = grads[i];
      switch (c.kind) {
        case OptimizerKind::kSgd: {
          g += wd * p[i];
          if (c.momentum > 0) {
            a[i] = t == 1 ? g : c.momentum * a[i] + g;
            g = c.nesterov ? g + c.momentum * a[i] : a[i];
          }
          p[i] -= lr * g;
          break;
        }
        case OptimizerKind::kAdam:
        case OptimizerKind::kAdamW: {
          if (c.kind == OptimizerKind::kAdamW) {
            p[i] -= lr * wd * p[i];
          } else {
            g += wd * p[i];
          }
          const double b1 = c.beta1, b2 = c.beta2;
          a[i] = b1 * a[i] + (1 - b1) * g;
          b[i] = b2 * b[i] + (1 - b2) * g * g;
          const double mHat = a[i] / (1 - std::pow(b1, t));
          const double vHat = b[i] / (1 - std::pow(b2, t));
          p[i] -= lr * mHat / (std::sqrt(vHat) + eps);
          break;
        }
        case OptimizerKind::kAdadelta: {
          g += wd * p[i];
          const double rho = c.rho;
          a[i] = rho * a[i] + (1 - rho) * g * g;
          const double delta = std::sqrt((b[i] + eps) / (a[i] + eps)) * g;
          b[i] = rho * b[i] + (1 - rho) * delta * delta;
          p[i] -= lr * delta;
          break;
        }
      }
    }
  }
};

std::vector<float> randomVector(Rng& rng, int64_t n, float scale) {
  std::vector<float> v(n);
  for (float& x : v) x = scale * rng.normal();
  return v;
}

// Configurations covering every kernel variant.
std::vector<std::pair<QString, OptimizerConfig>> allVariants() {
  std::vector<std::pair<QString, OptimizerConfig>> out;
  auto sgd = config(OptimizerKind::kSgd, 0.1f);
  sgd.momentum = 0.0f;
  out.emplace_back("sgd plain", sgd);
  sgd.weightDecay = 0.01f;
  out.emplace_back("sgd plain wd", sgd);
  sgd.momentum = 0.9f;
  out.emplace_back("sgd momentum wd", sgd);
  sgd.weightDecay = 0.0f;
  out.emplace_back("sgd momentum", sgd);
  sgd.nesterov = true;
  out.emplace_back("sgd nesterov", sgd);
  sgd.weightDecay = 0.05f;
  out.emplace_back("sgd nesterov wd", sgd);
  for (auto kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const QString name = kind == OptimizerKind::kAdam ? "adam" : "adamw";
    auto adam = config(kind, 0.01f);
    out.emplace_back(name, adam);
    adam.weightDecay = 0.1f;
    out.emplace_back(name + " wd", adam);
    adam.beta1 = 0.0f;  // PyTorch's lerp takes its second form (weight >= 0.5)
    out.emplace_back(name + " wd beta1=0", adam);
    adam.beta1 = 0.3f;
    adam.weightDecay = 0.0f;
    out.emplace_back(name + " beta1=0.3", adam);
  }
  auto adadelta = config(OptimizerKind::kAdadelta, 1.0f);
  adadelta.eps = 1e-6f;  // PyTorch's default, which the spec parser fills in
  out.emplace_back("adadelta", adadelta);
  adadelta.weightDecay = 0.1f;
  adadelta.rho = 0.95f;
  out.emplace_back("adadelta wd", adadelta);
  return out;
}

bool bitwiseEqual(std::span<const float> x, std::span<const float> y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size_bytes()) == 0;
}

template <typename Fn>
QString errorOf(Fn&& fn) {
  try {
    fn();
  } catch (const dtlab::Error& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace

class TestOptim : public QObject {
  Q_OBJECT
 private slots:
  // ---------------------------------------------------------------- SGD, by hand
  // lr 0.1, p0 = 1, gradients 1, 0.5, -1.

  void sgdPlain() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.momentum = 0.0f;
    // p = 1 - 0.1*1 = 0.9;  0.9 - 0.1*0.5 = 0.85;  0.85 + 0.1 = 0.95
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.9, 1e-6);
    EXPECT_NEAR(p[1], 0.85, 1e-6);
    EXPECT_NEAR(p[2], 0.95, 1e-6);
    auto opt = makeOptimizer(c);
    opt->init(5);
    QVERIFY(opt->state().empty());
  }

  void sgdMomentumFirstStepTakesTheGradient() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.momentum = 0.9f;
    // PyTorch: buf = g on the first step (not 0.9*0 + 0.1*g as an EMA would give).
    // t1: buf = 1,                 p = 1 - 0.1*1       = 0.9
    // t2: buf = 0.9*1 + 0.5 = 1.4, p = 0.9 - 0.14      = 0.76
    // t3: buf = 1.26 - 1 = 0.26,   p = 0.76 - 0.026    = 0.734
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.9, 1e-6);
    EXPECT_NEAR(p[1], 0.76, 1e-6);
    EXPECT_NEAR(p[2], 0.734, 1e-6);

    auto opt = makeOptimizer(c);
    opt->init(2);
    float params[] = {0.0f, 0.0f};
    const float grads[] = {3.0f, -2.0f};
    opt->update(params, grads, 0, 2, 1, 0.1f);
    QCOMPARE(opt->state().size(), std::size_t{1});
    QCOMPARE(opt->state()[0][0], 3.0f);
    QCOMPARE(opt->state()[0][1], -2.0f);
  }

  void sgdNesterov() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.momentum = 0.9f;
    c.nesterov = true;
    // d = g + 0.9*buf
    // t1: buf = 1,    d = 1 + 0.9    = 1.9,    p = 1 - 0.19       = 0.81
    // t2: buf = 1.4,  d = 0.5 + 1.26 = 1.76,   p = 0.81 - 0.176   = 0.634
    // t3: buf = 0.26, d = -1 + 0.234 = -0.766, p = 0.634 + 0.0766 = 0.7106
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.81, 1e-6);
    EXPECT_NEAR(p[1], 0.634, 1e-6);
    EXPECT_NEAR(p[2], 0.7106, 1e-6);
  }

  void sgdWeightDecayIsAddedToTheGradient() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.momentum = 0.9f;
    c.weightDecay = 0.1f;
    // d = g + 0.1*p
    // t1: d = 1.1,                 buf = 1.1,                     p = 1 - 0.11        = 0.89
    // t2: d = 0.5 + 0.089 = 0.589, buf = 0.99 + 0.589 = 1.579,    p = 0.89 - 0.1579   = 0.7321
    // t3: d = -1 + 0.07321,        buf = 1.4211 - 0.92679 = 0.49431, p = 0.7321 - 0.049431
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.89, 1e-6);
    EXPECT_NEAR(p[1], 0.7321, 1e-6);
    EXPECT_NEAR(p[2], 0.682669, 1e-6);
  }

  // ---------------------------------------------------------------- Adam, by hand
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, p0 = 1, gradients 1, 0.5, -1.

  void adam() {
    auto c = config(OptimizerKind::kAdam, 0.1f);
    // t1: m = 0.1, v = 0.001, m^ = 1, v^ = 1: p = 1 - 0.1 * 1/(1 + 1e-8) = 0.900000001
    // t2: m = 0.09 + 0.05 = 0.14, v = 0.000999 + 0.00025 = 0.001249,
    //     m^ = 0.14/0.19 = 0.7368421, v^ = 0.001249/0.001999 = 0.6248124 (sqrt 0.7904508),
    //     p = 0.900000001 - 0.1 * 0.9321868 = 0.8067820
    // t3: m = 0.126 - 0.1 = 0.026, v = 0.001247751 + 0.001 = 0.002247751,
    //     m^ = 0.026/0.271 = 0.0959410, v^ = 0.002247751/0.002997001 = 0.7499999 (sqrt 0.8660254)
    //     p = 0.8067820 - 0.1 * 0.1107831 = 0.7957037
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.900000001, 1e-6);
    EXPECT_NEAR(p[1], 0.8067820, 1e-6);
    EXPECT_NEAR(p[2], 0.7957037, 1e-6);
  }

  void adamwDecouplesWeightDecayFromAdamL2() {
    // Adam's L2 term goes through the normalisation: at t1, g' = 1.1 gives m^/sqrt(v^) = 1,
    // so the step is exactly lr, as without decay: p = 0.9 (+1e-9).
    auto c = config(OptimizerKind::kAdam, 0.1f);
    c.weightDecay = 0.1f;
    const auto adamL2 = scalarTrajectory(c);
    EXPECT_NEAR(adamL2[0], 0.9000000009, 1e-6);
    EXPECT_NEAR(adamL2[1], 0.8057718, 1e-6);
    EXPECT_NEAR(adamL2[2], 0.7850508, 1e-6);
    // AdamW first shrinks p by (1 - lr*wd) = 0.99, then takes the plain Adam step:
    // t1: p = 0.99 - 0.1 = 0.89;  t2: p = 0.89*0.99 - 0.09321868 = 0.7878820
    // t3: p = 0.7878820*0.99 - 0.01107831 = 0.7689249
    c.kind = OptimizerKind::kAdamW;
    const auto adamw = scalarTrajectory(c);
    EXPECT_NEAR(adamw[0], 0.890000001, 1e-6);
    EXPECT_NEAR(adamw[1], 0.7878820, 1e-6);
    EXPECT_NEAR(adamw[2], 0.7689249, 1e-6);
  }

  void adamWithoutFirstMomentumKeepsTheGradientExactly() {
    // beta1 = 0: PyTorch's lerp(m, g, 1) takes its second form, g - (g - m)*0, so exp_avg
    // is the gradient bit for bit; the first form m + 1*(g - m) would round.
    auto c = config(OptimizerKind::kAdam, 0.01f);
    c.beta1 = 0.0f;
    auto opt = makeOptimizer(c);
    const int64_t n = 41;
    opt->init(n);
    Rng rng(11);
    std::vector<float> params = randomVector(rng, n, 1.0f);
    for (int64_t t = 1; t <= 4; ++t) {
      const auto grads = randomVector(rng, n, 3.0f);
      opt->update(params.data(), grads.data(), 0, n, t, c.lr);
      QVERIFY(bitwiseEqual(opt->state()[0], grads));
    }
  }

  // ---------------------------------------------------------------- Adadelta, by hand

  void adadelta() {
    auto c = config(OptimizerKind::kAdadelta, 1.0f);
    c.eps = 1e-6f;
    // rho 0.9, p0 = 1, g = 1:
    // t1: sq = 0.1, delta = sqrt(0 + 1e-6)/sqrt(0.1 + 1e-6) = 0.001/0.3162293 = 0.0031622619,
    //     acc = 0.1 * delta^2 = 9.99990e-7, p = 0.9968377
    // t2 (g = 0.5): sq = 0.09 + 0.025 = 0.115, delta = sqrt(1.99999e-6)/sqrt(0.115001)*0.5
    //     = 0.0014142/0.3391180*0.5 = 0.0020851, p = 0.9947526
    const auto p = scalarTrajectory(c);
    EXPECT_NEAR(p[0], 0.9968377, 1e-6);
    EXPECT_NEAR(p[1], 0.9947526, 1e-6);
    EXPECT_NEAR(p[2], 0.9981398, 1e-6);
  }

  void adadeltaUsesEpsAsGiven() {
    // The spec parser fills in PyTorch's 1e-6; a config built in code gets what it says.
    // With eps 1e-8 the first delta is sqrt(1e-8)/sqrt(0.1 + 1e-8) = 1e-4/0.3162278 = 3.162e-4.
    auto c = config(OptimizerKind::kAdadelta, 1.0f);
    QCOMPARE(c.eps, 1e-8f);
    EXPECT_NEAR(scalarTrajectory(c)[0], 0.9996838, 1e-6);
    c.eps = 1e-5f;  // delta = sqrt(1e-5)/sqrt(0.10001)
    EXPECT_NEAR(scalarTrajectory(c)[0], 1.0 - std::sqrt(1e-5 / 0.10001), 1e-6);
  }

  // ---------------------------------------------------------------- vs double reference

  void everyVariantMatchesTheDoubleReference() {
    for (const auto& [name, c] : allVariants()) {
      Rng rng(42);
      const int64_t n = 37;
      std::vector<float> params = randomVector(rng, n, 1.0f);
      Reference ref(c, c.eps, params);
      auto opt = makeOptimizer(c);
      opt->init(n);
      for (int64_t t = 1; t <= 3; ++t) {
        const auto grads = randomVector(rng, n, 0.5f);
        const float lr = c.lr * (1.0f - 0.2f * static_cast<float>(t - 1));  // scheduled lr varies
        opt->update(params.data(), grads.data(), 0, n, t, lr);
        ref.step(grads, t, lr);
      }
      for (int64_t i = 0; i < n; ++i) {
        QVERIFY2(near(params[i], ref.p[i], 2e-5), qPrintable(QString("%1: p[%2] = %3, reference %4")
                                                                 .arg(name)
                                                                 .arg(i)
                                                                 .arg(params[i], 0, 'g', 9)
                                                                 .arg(ref.p[i], 0, 'g', 9)));
      }
    }
  }

  // ---------------------------------------------------------------- ranges and threads

  void rangeUpdatesEqualOneFullUpdate() {
    const int64_t n = 53;
    const std::vector<std::vector<int64_t>> splits = {
        {0, 13, n}, {0, 1, 2, 19, 19, 36, 51, n}, {0, n - 1, n}};
    for (const auto& [name, c] : allVariants()) {
      for (const auto& cuts : splits) {
        Rng rng(7);
        std::vector<float> whole = randomVector(rng, n, 1.0f);
        std::vector<float> pieces = whole;
        auto a = makeOptimizer(c);
        auto b = makeOptimizer(c);
        a->init(n);
        b->init(n);
        for (int64_t t = 1; t <= 3; ++t) {
          const auto grads = randomVector(rng, n, 0.5f);
          a->update(whole.data(), grads.data(), 0, n, t, c.lr);
          for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
            b->update(pieces.data(), grads.data(), cuts[k], cuts[k + 1], t, c.lr);
        }
        QVERIFY2(bitwiseEqual(whole, pieces), qPrintable(name));
        for (std::size_t s = 0; s < a->state().size(); ++s)
          QVERIFY2(bitwiseEqual(a->state()[s], b->state()[s]), qPrintable(name));
      }
    }
  }

  void identicalElementsGetIdenticalResults() {
    // Elements in whole lane groups and in the scalar tail must compute the same thing,
    // or results would depend on where a bucket or thread boundary falls.
    const int64_t n = 37;
    for (const auto& [name, c] : allVariants()) {
      auto opt = makeOptimizer(c);
      opt->init(n);
      std::vector<float> params(n, 0.731f);
      for (int64_t t = 1; t <= 3; ++t) {
        const std::vector<float> grads(n, t == 2 ? -0.377f : 0.1234567f);
        opt->update(params.data(), grads.data(), 0, n, t, c.lr);
      }
      for (int64_t i = 1; i < n; ++i)
        QVERIFY2(std::memcmp(&params[i], &params[0], sizeof(float)) == 0,
                 qPrintable(QString("%1: element %2 differs").arg(name).arg(i)));
      QVERIFY(params[0] != 0.731f);
    }
  }

  void disjointRangesUpdateConcurrently() {
    const int64_t n = 100003;
    const int threads = 4;
    for (const auto& [name, c] : allVariants()) {
      Rng rng(3);
      std::vector<float> serial = randomVector(rng, n, 1.0f);
      std::vector<float> parallel = serial;
      auto a = makeOptimizer(c);
      auto b = makeOptimizer(c);
      a->init(n);
      b->init(n);
      for (int64_t t = 1; t <= 2; ++t) {
        const auto grads = randomVector(rng, n, 0.5f);
        a->update(serial.data(), grads.data(), 0, n, t, c.lr);
        std::vector<std::thread> pool;
        const auto lr = c.lr;  // a structured binding: clang 14 cannot capture it
        for (int k = 0; k < threads; ++k) {
          const int64_t begin = n * k / threads, end = n * (k + 1) / threads;
          pool.emplace_back(
              [&, begin, end, t] { b->update(parallel.data(), grads.data(), begin, end, t, lr); });
        }
        for (auto& th : pool) th.join();
      }
      QVERIFY2(bitwiseEqual(serial, parallel), qPrintable(name));
    }
  }

  // ---------------------------------------------------------------- state and misuse

  void stateLayoutAndReset() {
    struct Case {
      OptimizerKind kind;
      const char* name;
      std::size_t buffers;
    };
    for (const Case& k :
         {Case{OptimizerKind::kSgd, "sgd", 1}, Case{OptimizerKind::kAdam, "adam", 2},
          Case{OptimizerKind::kAdamW, "adamw", 2}, Case{OptimizerKind::kAdadelta, "adadelta", 2}}) {
      auto opt = makeOptimizer(config(k.kind, 0.1f));
      QCOMPARE(opt->name(), k.name);
      QCOMPARE(opt->size(), int64_t{-1});
      opt->init(10);
      QCOMPARE(opt->size(), int64_t{10});
      QCOMPARE(opt->state().size(), k.buffers);
      std::vector<float> p(10, 1.0f), g(10, 0.5f);
      opt->update(p.data(), g.data(), 0, 10, 1, 0.1f);
      bool touched = false;
      for (auto s : opt->state())
        for (float x : s) touched |= x != 0.0f;
      QVERIFY(touched);
      opt->init(10);  // reset
      for (auto s : opt->state()) {
        QCOMPARE(s.size(), std::size_t{10});
        for (float x : s) QCOMPARE(x, 0.0f);
      }
      // Restoring a checkpoint through mutableState() changes the next update.
      opt->mutableState()[0][3] = 5.0f;
      QCOMPARE(opt->state()[0][3], 5.0f);
    }
  }

  void misuseThrows() {
    auto opt = makeOptimizer(config(OptimizerKind::kAdam, 0.1f));
    std::vector<float> p(4), g(4);
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, opt->update(p.data(), g.data(), 0, 4, 1, 0.1f));
    opt->init(4);
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, opt->update(p.data(), g.data(), 0, 5, 1, 0.1f));
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, opt->update(p.data(), g.data(), 3, 2, 1, 0.1f));
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, opt->update(p.data(), g.data(), 0, 4, 0, 0.1f));
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, opt->init(-1));
    opt->update(p.data(), g.data(), 2, 2, 1, 0.1f);  // an empty range is fine
    opt->init(0);
    opt->update(nullptr, nullptr, 0, 0, 1, 0.1f);
  }

  void invalidOptimizerConfigsNameTheField() {
    struct Case {
      OptimizerConfig c;
      const char* field;
    };
    std::vector<Case> cases;
    auto add = [&](OptimizerKind kind, auto mutate, const char* field) {
      auto c = config(kind, 0.1f);
      mutate(c);
      cases.push_back({c, field});
    };
    using C = OptimizerConfig&;
    add(
        OptimizerKind::kSgd, [](C c) { c.lr = 0.0f; }, "optimizer.lr");
    add(
        OptimizerKind::kAdam, [](C c) { c.lr = std::nanf(""); }, "optimizer.lr");
    add(
        OptimizerKind::kSgd, [](C c) { c.lr = INFINITY; }, "optimizer.lr");
    add(
        OptimizerKind::kSgd, [](C c) { c.momentum = 1.0f; }, "optimizer.momentum");
    add(
        OptimizerKind::kSgd, [](C c) { c.momentum = -0.1f; }, "optimizer.momentum");
    add(
        OptimizerKind::kSgd,
        [](C c) {
          c.momentum = 0.0f;
          c.nesterov = true;
        },
        "optimizer.nesterov");
    add(
        OptimizerKind::kSgd, [](C c) { c.weightDecay = -1.0f; }, "optimizer.weight_decay");
    add(
        OptimizerKind::kAdam, [](C c) { c.beta1 = 1.0f; }, "optimizer.beta1");
    add(
        OptimizerKind::kAdamW, [](C c) { c.beta2 = -0.5f; }, "optimizer.beta2");
    add(
        OptimizerKind::kAdam, [](C c) { c.eps = 0.0f; }, "optimizer.eps");
    add(
        OptimizerKind::kAdadelta, [](C c) { c.rho = 1.0f; }, "optimizer.rho");
    add(
        OptimizerKind::kAdadelta, [](C c) { c.eps = -1e-6f; }, "optimizer.eps");
    add(
        OptimizerKind::kSgd, [](C c) { c.schedule.warmupSteps = -1; },
        "optimizer.schedule.warmup_steps");
    add(
        OptimizerKind::kSgd,
        [](C c) {
          c.schedule.kind = ScheduleKind::kStep;
          c.schedule.stepSize = 0;
        },
        "optimizer.schedule.step_size");
    add(
        OptimizerKind::kSgd,
        [](C c) {
          c.schedule.kind = ScheduleKind::kStep;
          c.schedule.gamma = 0.0f;
        },
        "optimizer.schedule.gamma");
    add(
        OptimizerKind::kSgd,
        [](C c) {
          c.schedule.kind = ScheduleKind::kCosine;
          c.schedule.minLr = -0.1f;
        },
        "optimizer.schedule.min_lr");
    add(
        OptimizerKind::kSgd, [](C c) { c.scaleLrBaseBatch = 0; }, "optimizer.scale_lr_base_batch");

    for (const Case& k : cases) {
      try {
        makeOptimizer(k.c);
        QFAIL(qPrintable(QString("no error for %1").arg(k.field)));
      } catch (const dtlab::core::SpecError& e) {
        QCOMPARE(QString::fromStdString(e.path()), QString(k.field));
        QVERIFY(QString(e.what()).startsWith(QString(k.field) + ": "));
      }
      QVERIFY_THROWS_EXCEPTION(dtlab::core::SpecError, LrSchedule(k.c, 128, 100));
    }

    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.momentum = 1.5f;
    QCOMPARE(errorOf([&] { makeOptimizer(c); }),
             QString("optimizer.momentum: must be in [0, 1), got 1.5"));

    // Fields another kind uses are not this kind's business.
    auto adam = config(OptimizerKind::kAdam, 0.1f);
    adam.momentum = 1.5f;
    adam.rho = 2.0f;
    QVERIFY(makeOptimizer(adam) != nullptr);
  }

  // ---------------------------------------------------------------- schedules

  void constantSchedule() {
    const LrSchedule s(config(OptimizerKind::kSgd, 0.1f), 128, 1000);
    QCOMPARE(s.baseLr(), 0.1f);
    QCOMPARE(s.at(1), 0.1f);
    QCOMPARE(s.at(1000), 0.1f);
    QCOMPARE(s.at(5000), 0.1f);
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, s.at(0));
  }

  void linearScalingRule() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.scaleLrBaseBatch = 256;
    // 0.1 * 1024 / 256 = 0.4;  0.1 * 64 / 256 = 0.025
    EXPECT_NEAR(LrSchedule(c, 1024, 0).baseLr(), 0.4, 1e-7);
    EXPECT_NEAR(LrSchedule(c, 1024, 0).at(7), 0.4, 1e-7);
    EXPECT_NEAR(LrSchedule(c, 64, 0).baseLr(), 0.025, 1e-7);
    QVERIFY_THROWS_EXCEPTION(dtlab::core::SpecError, LrSchedule(c, 0, 10));
    c.scaleLrBaseBatch.reset();
    EXPECT_NEAR(LrSchedule(c, 1024, 0).baseLr(), 0.1, 1e-7);
  }

  void warmUpIsLinearToTheBaseRate() {
    auto c = config(OptimizerKind::kSgd, 0.1f);
    c.scaleLrBaseBatch = 256;
    c.schedule.warmupSteps = 4;
    const LrSchedule s(c, 512, 0);  // base 0.2
    // step k <= 4: 0.2 * k / 4
    EXPECT_NEAR(s.at(1), 0.05, 1e-7);
    EXPECT_NEAR(s.at(2), 0.10, 1e-7);
    EXPECT_NEAR(s.at(3), 0.15, 1e-7);
    EXPECT_NEAR(s.at(4), 0.20, 1e-7);
    EXPECT_NEAR(s.at(5), 0.20, 1e-7);
    EXPECT_NEAR(s.at(100), 0.20, 1e-7);
  }

  void stepDecayMatchesStepLr() {
    auto c = config(OptimizerKind::kSgd, 1.0f);
    c.schedule.kind = ScheduleKind::kStep;
    c.schedule.stepSize = 10;
    c.schedule.gamma = 0.1f;
    const LrSchedule s(c, 128, 0);
    // StepLR: steps 1..10 at 1, 11..20 at 0.1, 21.. at 0.01.
    EXPECT_NEAR(s.at(1), 1.0, 1e-7);
    EXPECT_NEAR(s.at(10), 1.0, 1e-7);
    EXPECT_NEAR(s.at(11), 0.1, 1e-7);
    EXPECT_NEAR(s.at(20), 0.1, 1e-7);
    EXPECT_NEAR(s.at(21), 0.01, 1e-7);
    EXPECT_NEAR(s.at(35), 0.001, 1e-7);

    c.schedule.warmupSteps = 5;  // warm-up first, then the decay counts from step 6
    const LrSchedule w(c, 128, 0);
    EXPECT_NEAR(w.at(1), 0.2, 1e-7);
    EXPECT_NEAR(w.at(5), 1.0, 1e-7);
    EXPECT_NEAR(w.at(6), 1.0, 1e-7);
    EXPECT_NEAR(w.at(15), 1.0, 1e-7);
    EXPECT_NEAR(w.at(16), 0.1, 1e-7);
  }

  void cosineReachesTheFloorAtTheLastStep() {
    auto c = config(OptimizerKind::kSgd, 1.0f);
    c.schedule.kind = ScheduleKind::kCosine;
    const LrSchedule s(c, 128, 11);
    // T = 11 steps, e = step - 1, lr = (1 + cos(pi e / 10)) / 2
    EXPECT_NEAR(s.at(1), 1.0, 1e-7);
    EXPECT_NEAR(s.at(3), 0.9045085, 1e-6);  // (1 + cos(0.2 pi))/2 = (1 + 0.8090170)/2
    EXPECT_NEAR(s.at(6), 0.5, 1e-7);
    EXPECT_NEAR(s.at(11), 0.0, 1e-7);
    EXPECT_NEAR(s.at(12), 0.0, 1e-7);  // clamped past the end

    c.schedule.minLr = 0.1f;
    c.schedule.warmupSteps = 3;
    const LrSchedule w(c, 128, 12);
    // warm-up 1/3, 2/3, 1; then T = 9 cosine steps from step 4 (e = 0) to step 12 (e = 8)
    EXPECT_NEAR(w.at(1), 1.0 / 3.0, 1e-6);
    EXPECT_NEAR(w.at(3), 1.0, 1e-7);
    EXPECT_NEAR(w.at(4), 1.0, 1e-7);
    EXPECT_NEAR(w.at(8), 0.55, 1e-6);  // e = 4, halfway: 0.1 + 0.9 * 0.5
    EXPECT_NEAR(w.at(12), 0.1, 1e-7);
    EXPECT_NEAR(w.at(1000), 0.1, 1e-7);
  }

  void cosineWithUnknownTotalUsesStepSize() {
    auto c = config(OptimizerKind::kSgd, 1.0f);
    c.schedule.kind = ScheduleKind::kCosine;
    c.schedule.stepSize = 5;
    const LrSchedule s(c, 128, 0);
    // T = 5: e = 0..4 -> (1 + cos(pi e / 4)) / 2
    EXPECT_NEAR(s.at(1), 1.0, 1e-7);
    EXPECT_NEAR(s.at(3), 0.5, 1e-7);
    EXPECT_NEAR(s.at(5), 0.0, 1e-7);
    EXPECT_NEAR(s.at(9), 0.0, 1e-7);
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, LrSchedule(c, 128, -1));
  }
};

QTEST_APPLESS_MAIN(TestOptim)
#include "test_optim.moc"
