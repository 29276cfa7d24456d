#include <QtTest/QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"

using dtlab::core::Dataset;
using dtlab::core::DatasetConfig;
using dtlab::core::makeDataset;
using dtlab::core::Split;
using dtlab::core::TaskKind;
using dtlab::core::Tensor;

namespace {

const std::string kAllKinds[] = {"gaussian_blobs", "two_spirals",       "checkerboard",
                                 "teacher",        "linear_regression", "shapes"};

// A small config of each kind, as the spec parser would fill it in.
DatasetConfig smallConfig(std::string kind, int64_t train = 1200, int64_t test = 300) {
  DatasetConfig c = dtlab::core::defaultDataset(kind);
  c.trainSize = train;
  c.testSize = test;
  c.seed = 42;
  return c;
}

struct Split2 {
  std::vector<float> x;
  std::vector<float> y;
};

Split2 generateAll(const Dataset& d, Split split) {
  const int64_t n = d.size(split);
  Split2 s{std::vector<float>(static_cast<std::size_t>(n * d.features())),
           std::vector<float>(static_cast<std::size_t>(n))};
  d.generate(split, 0, n, s.x.data(), s.y.data());
  return s;
}

bool sameBytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Fraction of test samples whose nearest class mean (estimated on train) is their class.
double nearestCentroidAccuracy(const Dataset& d) {
  const Split2 train = generateAll(d, Split::kTrain);
  const Split2 test = generateAll(d, Split::kTest);
  const int64_t f = d.features();
  const int64_t classes = d.outputs();
  std::vector<double> means(static_cast<std::size_t>(classes * f), 0.0);
  std::vector<int64_t> counts(static_cast<std::size_t>(classes), 0);
  for (std::size_t i = 0; i < train.y.size(); ++i) {
    const auto c = static_cast<int64_t>(train.y[i]);
    ++counts[c];
    for (int64_t j = 0; j < f; ++j) means[c * f + j] += train.x[i * f + j];
  }
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t j = 0; j < f; ++j) means[c * f + j] /= static_cast<double>(counts[c]);
  int64_t correct = 0;
  for (std::size_t i = 0; i < test.y.size(); ++i) {
    int64_t best = 0;
    double bestDistance = INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      double distance = 0.0;
      for (int64_t j = 0; j < f; ++j) {
        const double t = test.x[i * f + j] - means[c * f + j];
        distance += t * t;
      }
      if (distance < bestDistance) {
        bestDistance = distance;
        best = c;
      }
    }
    correct += best == static_cast<int64_t>(test.y[i]);
  }
  return static_cast<double>(correct) / static_cast<double>(test.y.size());
}

// 1-nearest-neighbour test accuracy: the separability of a low-dimensional dataset.
double nearestNeighbourAccuracy(const Dataset& d) {
  const Split2 train = generateAll(d, Split::kTrain);
  const Split2 test = generateAll(d, Split::kTest);
  const int64_t f = d.features();
  int64_t correct = 0;
  for (std::size_t i = 0; i < test.y.size(); ++i) {
    std::size_t best = 0;
    double bestDistance = INFINITY;
    for (std::size_t k = 0; k < train.y.size(); ++k) {
      double distance = 0.0;
      for (int64_t j = 0; j < f; ++j) {
        const double t = test.x[i * f + j] - train.x[k * f + j];
        distance += t * t;
      }
      if (distance < bestDistance) {
        bestDistance = distance;
        best = k;
      }
    }
    correct += train.y[best] == test.y[i];
  }
  return static_cast<double>(correct) / static_cast<double>(test.y.size());
}

// Solves the symmetric positive definite system a x = b (n x n, row-major) in place by
// Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<double> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    for (std::size_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
    std::swap(b[col], b[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double factor = a[r * n + col] / a[col * n + col];
      for (std::size_t k = col; k < n; ++k) a[r * n + k] -= factor * a[col * n + k];
      b[r] -= factor * b[col];
    }
  }
  std::vector<double> x(n);
  for (std::size_t r = n; r-- > 0;) {
    double s = b[r];
    for (std::size_t k = r + 1; k < n; ++k) s -= a[r * n + k] * x[k];
    x[r] = s / a[r * n + r];
  }
  return x;
}

}  // namespace

class TestDatasets : public QObject {
  Q_OBJECT
 private slots:
  void sameSeedSameBytesOtherSeedOtherBytes() {
    for (std::string kind : kAllKinds) {
      const DatasetConfig config = smallConfig(kind);
      DatasetConfig other = config;
      other.seed = config.seed + 1;
      const auto a = makeDataset(config);
      const auto b = makeDataset(config);
      const auto c = makeDataset(other);
      for (Split split : {Split::kTrain, Split::kTest}) {
        const Split2 sa = generateAll(*a, split);
        const Split2 sb = generateAll(*b, split);
        const Split2 sc = generateAll(*c, split);
        QVERIFY2(sameBytes(sa.x, sb.x) && sameBytes(sa.y, sb.y), kind.c_str());
        QVERIFY2(!sameBytes(sa.x, sc.x), kind.c_str());
      }
    }
  }

  void samplesDoNotDependOnChunkingOrWorkerCount() {
    for (std::string kind : kAllKinds) {
      const auto d = makeDataset(smallConfig(kind));
      const int64_t f = d->features();
      const Split2 full = generateAll(*d, Split::kTrain);
      const int64_t n = d->size(Split::kTrain);
      // Contiguous shards for several worker counts, each generated on its own.
      for (int64_t workers : {1, 3, 7, 64}) {
        for (int64_t w = 0; w < workers; ++w) {
          const int64_t begin = n * w / workers;
          const int64_t count = n * (w + 1) / workers - begin;
          std::vector<float> x(static_cast<std::size_t>(count * f));
          std::vector<float> y(static_cast<std::size_t>(count));
          d->generate(Split::kTrain, begin, count, x.data(), y.data());
          QVERIFY2(std::memcmp(x.data(), full.x.data() + begin * f, x.size() * sizeof(float)) == 0,
                   kind.c_str());
          QVERIFY2(std::memcmp(y.data(), full.y.data() + begin, y.size() * sizeof(float)) == 0,
                   kind.c_str());
        }
      }
      // An arbitrary index list, with repeats, through gather().
      std::vector<int64_t> indices;
      dtlab::core::Rng rng(9);
      for (int k = 0; k < 200; ++k) indices.push_back(static_cast<int64_t>(rng.below(n)));
      indices.push_back(n - 1);
      indices.push_back(0);
      Tensor x;
      Tensor y;
      d->gather(Split::kTrain, indices, x, y);
      QCOMPARE(x.rows(), static_cast<int64_t>(indices.size()));
      QCOMPARE(x.cols(), f);
      QCOMPARE(y.rows(), static_cast<int64_t>(indices.size()));
      QCOMPARE(y.cols(), 1);
      for (std::size_t k = 0; k < indices.size(); ++k) {
        QVERIFY2(std::memcmp(x.row(static_cast<int64_t>(k)), full.x.data() + indices[k] * f,
                             static_cast<std::size_t>(f) * sizeof(float)) == 0,
                 kind.c_str());
        QCOMPARE(y.data()[k], full.y[indices[k]]);
      }
    }
  }

  void shapesAndValuesAsConfigured() {
    struct Expected {
      std::string kind;
      int64_t features;
      int64_t outputs;
      TaskKind task;
    };
    const Expected expected[] = {
        {"gaussian_blobs", 32, 10, TaskKind::kClassification},
        {"two_spirals", 2, 2, TaskKind::kClassification},
        {"checkerboard", 2, 2, TaskKind::kClassification},
        {"teacher", 32, 10, TaskKind::kClassification},
        {"linear_regression", 32, 1, TaskKind::kRegression},
        {"shapes", 784, 10, TaskKind::kClassification},
    };
    for (const Expected& e : expected) {
      const auto d = makeDataset(smallConfig(e.kind, 1000, 250));
      QCOMPARE(d->features(), e.features);
      QCOMPARE(d->outputs(), e.outputs);
      QVERIFY(d->task() == e.task);
      QCOMPARE(d->size(Split::kTrain), 1000);
      QCOMPARE(d->size(Split::kTest), 250);
      const Split2 train = generateAll(*d, Split::kTrain);
      const Split2 test = generateAll(*d, Split::kTest);
      for (float v : train.x) QVERIFY2(std::isfinite(v), e.kind.c_str());
      for (float v : train.y) {
        QVERIFY2(std::isfinite(v), e.kind.c_str());
        if (e.task == TaskKind::kClassification) {
          QVERIFY(v >= 0.0f && v < static_cast<float>(e.outputs) && v == std::floor(v));
        }
      }
      // Train and test are different streams: the first test rows are not train rows.
      QVERIFY2(std::memcmp(train.x.data(), test.x.data(), test.x.size() * sizeof(float)) != 0,
               e.kind.c_str());
    }
    // Width-fixed kinds ignore the config's features (and fixed-class kinds its classes).
    DatasetConfig spirals = smallConfig("two_spirals");
    spirals.features = 32;
    spirals.classes = 5;
    QCOMPARE(makeDataset(spirals)->features(), 2);
    QCOMPARE(makeDataset(spirals)->outputs(), 5);
    DatasetConfig board = smallConfig("checkerboard");
    board.classes = 10;
    QCOMPARE(makeDataset(board)->outputs(), 2);
    // The teacher has label noise instead and ignores noise, even a nonsensical one.
    DatasetConfig teacher = smallConfig("teacher");
    teacher.parameters.set("noise", -1.0);
    QCOMPARE(makeDataset(teacher)->outputs(), 10);
  }

  void planarKindsSpanTheUnitSquare() {
    for (std::string kind : {"two_spirals", "checkerboard"}) {
      const auto d = makeDataset(smallConfig(kind, 4000, 10));
      const Split2 s = generateAll(*d, Split::kTrain);
      float lo = INFINITY;
      float hi = -INFINITY;
      for (float v : s.x) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      QVERIFY2(lo > -1.2f && lo < -0.8f && hi < 1.2f && hi > 0.8f, kind.c_str());
    }
  }

  void classesAreBalancedAndLabelAgreesWithGenerate() {
    for (std::string kind : kAllKinds) {
      if (kind == "linear_regression") continue;
      // Odd sizes, so balance "to within one sample" is tested where classes cannot be exact.
      const auto d = makeDataset(smallConfig(kind, 5003, 1001));
      const int64_t classes = d->outputs();
      for (Split split : {Split::kTrain, Split::kTest}) {
        const Split2 s = generateAll(*d, split);
        const int64_t n = d->size(split);
        std::vector<int64_t> counts(static_cast<std::size_t>(classes), 0);
        for (float y : s.y) ++counts[static_cast<int64_t>(y)];
        const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
        if (kind == "teacher") {
          // Tuned on probes: a few percent off, far from a random network's skew.
          const double expected = static_cast<double>(n) / static_cast<double>(classes);
          QVERIFY2(*lo > 0.8 * expected && *hi < 1.2 * expected,
                   qPrintable(QString("teacher class counts %1..%2").arg(*lo).arg(*hi)));
        } else {
          QVERIFY2(*hi - *lo <= 1, kind.c_str());
        }
        std::vector<int64_t> labels(static_cast<std::size_t>(n));
        d->labels(split, 0, n, labels.data());
        for (int64_t i = 0; i < n; ++i) {
          QCOMPARE(labels[i], static_cast<int64_t>(s.y[i]));
          if (i % 97 == 0) QCOMPARE(d->label(split, i), labels[i]);
        }
      }
    }
  }

  void blobsSeparationControlsDifficulty() {
    DatasetConfig config = smallConfig("gaussian_blobs", 5000, 2000);
    const double easy = nearestCentroidAccuracy(*makeDataset(config));
    config.parameters.set("separation", 2.0);
    const double medium = nearestCentroidAccuracy(*makeDataset(config));
    config.parameters.set("separation", 0.5);
    const double hard = nearestCentroidAccuracy(*makeDataset(config));
    qInfo("blobs nearest-centroid accuracy: separation 4: %.3f, 2: %.3f, 0.5: %.3f", easy, medium,
          hard);
    QVERIFY(easy > 0.97);
    QVERIFY(medium > 0.5 && medium < 0.9);
    QVERIFY(hard < 0.35);
    // Within-class spread is the configured noise.
    config.parameters.set("separation", 4.0);
    config.parameters.set("noise", 0.5);
    const auto d = makeDataset(config);
    const Split2 s = generateAll(*d, Split::kTrain);
    const Split2 again =
        generateAll(*makeDataset(smallConfig("gaussian_blobs", 5000)), Split::kTrain);
    double sq = 0.0;
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      // Same seed, same centres and same unit draws: the rows differ by the noise scale.
      const double diff = s.x[k] - again.x[k];
      sq += diff * diff;
    }
    const double std1 = std::sqrt(sq / static_cast<double>(s.x.size())) / 0.5;
    QVERIFY2(std::abs(std1 - 1.0) < 0.02, qPrintable(QString::number(std1)));
  }

  void lowDimensionalKindsAreSeparable() {
    for (std::string kind : {"two_spirals", "checkerboard"}) {
      const auto d = makeDataset(smallConfig(kind, 4000, 500));
      const double accuracy = nearestNeighbourAccuracy(*d);
      qInfo("%s 1-NN accuracy %.3f", kind.c_str(), accuracy);
      QVERIFY2(accuracy > 0.95, kind.c_str());
    }
    // Jitter is what blurs them.
    DatasetConfig noisy = smallConfig("two_spirals", 4000, 500);
    noisy.parameters.set("noise", 8.0);
    const double blurred = nearestNeighbourAccuracy(*makeDataset(noisy));
    qInfo("two_spirals 1-NN accuracy at noise 8: %.3f", blurred);
    QVERIFY(blurred < 0.85);
  }

  void checkerboardLabelIsTheCellColour() {
    DatasetConfig config = smallConfig("checkerboard", 4000, 10);
    config.parameters.set("grid_size", int64_t{5});
    config.parameters.set("noise", 0.0);
    const auto d = makeDataset(config);
    const Split2 s = generateAll(*d, Split::kTrain);
    for (std::size_t i = 0; i < s.y.size(); ++i) {
      const auto cx = static_cast<int64_t>(std::floor((s.x[2 * i] + 1.0f) * 2.5f));
      const auto cy = static_cast<int64_t>(std::floor((s.x[2 * i + 1] + 1.0f) * 2.5f));
      QVERIFY(cx >= 0 && cx < 5 && cy >= 0 && cy < 5);
      QCOMPARE(static_cast<float>((cx + cy) % 2), s.y[i]);
    }
  }

  void teacherLabelNoiseRelabelsTheConfiguredFraction() {
    DatasetConfig config = smallConfig("teacher", 20000, 10);
    const auto clean = makeDataset(config);
    config.parameters.set("label_noise", 0.3);
    const auto noisy = makeDataset(config);
    const Split2 a = generateAll(*clean, Split::kTrain);
    const Split2 b = generateAll(*noisy, Split::kTrain);
    QVERIFY(sameBytes(a.x, b.x));
    int64_t changed = 0;
    for (std::size_t i = 0; i < a.y.size(); ++i) changed += a.y[i] != b.y[i];
    // A replacement class equals the clean one 1 time in 10.
    const double fraction = static_cast<double>(changed) / static_cast<double>(a.y.size());
    QVERIFY2(std::abs(fraction - 0.27) < 0.015, qPrintable(QString::number(fraction)));
  }

  void regressionTargetsFollowALinearModel() {
    DatasetConfig config = smallConfig("linear_regression", 6000, 2000);
    config.features = 8;
    config.parameters.set("noise", 0.5);
    const auto d = makeDataset(config);
    // Least squares with an intercept column, on train.
    const int64_t f = d->features();
    const int64_t p = f + 1;
    const Split2 train = generateAll(*d, Split::kTrain);
    std::vector<double> ata(static_cast<std::size_t>(p * p), 0.0);
    std::vector<double> aty(static_cast<std::size_t>(p), 0.0);
    std::vector<double> row(static_cast<std::size_t>(p));
    for (std::size_t i = 0; i < train.y.size(); ++i) {
      for (int64_t j = 0; j < f; ++j) row[j] = train.x[i * f + j];
      row[f] = 1.0;
      for (int64_t r = 0; r < p; ++r) {
        aty[r] += row[r] * train.y[i];
        for (int64_t c = 0; c < p; ++c) ata[r * p + c] += row[r] * row[c];
      }
    }
    const std::vector<double> beta = solve(ata, aty);
    // The signal has unit variance by construction: w is a unit vector.
    double norm = 0.0;
    for (int64_t j = 0; j < f; ++j) norm += beta[j] * beta[j];
    QVERIFY2(std::abs(std::sqrt(norm) - 1.0) < 0.03, qPrintable(QString::number(std::sqrt(norm))));
    // On the test split the fitted model leaves only the noise.
    const Split2 test = generateAll(*d, Split::kTest);
    double sq = 0.0;
    for (std::size_t i = 0; i < test.y.size(); ++i) {
      double prediction = beta[f];
      for (int64_t j = 0; j < f; ++j) prediction += beta[j] * test.x[i * f + j];
      sq += (test.y[i] - prediction) * (test.y[i] - prediction);
    }
    const double residual = sq / static_cast<double>(test.y.size());
    QVERIFY2(std::abs(residual - 0.25) < 0.025, qPrintable(QString::number(residual)));
    // Regression has no classes.
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->label(Split::kTrain, 0));
  }

  void shapeClassesLookDifferent() {
    const auto d = makeDataset(smallConfig("shapes", 2000, 10));
    const Split2 s = generateAll(*d, Split::kTrain);
    constexpr int64_t kPixels = 784;
    std::vector<double> means(10 * kPixels, 0.0);
    double total = 0.0;
    for (std::size_t i = 0; i < s.y.size(); ++i) {
      const auto c = static_cast<int64_t>(s.y[i]);
      for (int64_t j = 0; j < kPixels; ++j) {
        means[c * kPixels + j] += s.x[i * kPixels + j] / 200.0;
        total += s.x[i * kPixels + j];
      }
    }
    // Shapes cover a modest part of a dark canvas.
    const double meanPixel = total / static_cast<double>(s.x.size());
    QVERIFY2(meanPixel > 0.03 && meanPixel < 0.3, qPrintable(QString::number(meanPixel)));
    // Every pair of class-mean images differs clearly (a vertical and a horizontal bar most
    // of all; a filled circle and a filled square least).
    double closest = INFINITY;
    for (int a = 0; a < 10; ++a) {
      for (int b = a + 1; b < 10; ++b) {
        double sq = 0.0;
        for (int64_t j = 0; j < kPixels; ++j) {
          const double t = means[a * kPixels + j] - means[b * kPixels + j];
          sq += t * t;
        }
        closest = std::min(closest, std::sqrt(sq));
      }
    }
    qInfo("closest class means %.3f, mean pixel %.3f", closest, meanPixel);
    QVERIFY2(closest > 0.3, qPrintable(QString::number(closest)));
    // Within a class, images vary (position, size, intensity), not just by pixel noise.
    DatasetConfig quiet = smallConfig("shapes", 20, 10);
    quiet.parameters.set("noise", 0.0);
    const Split2 q = generateAll(*makeDataset(quiet), Split::kTrain);
    QVERIFY(std::memcmp(q.x.data(), q.x.data() + 10 * kPixels, kPixels * sizeof(float)) != 0);
    for (float v : q.x) QVERIFY(v >= 0.0f && v <= 1.0f);
  }

  void shapesGenerateQuickly() {
    const auto d = makeDataset(smallConfig("shapes", 60000, 10));
    std::vector<float> x(static_cast<std::size_t>(60000 * 784));
    std::vector<float> y(60000);
    const auto start = std::chrono::steady_clock::now();
    d->generate(Split::kTrain, 0, 60000, x.data(), y.data());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("60000 shapes images in %.2f s", seconds);
    // About half a second optimised on one core; the bound leaves room for a loaded
    // machine and unoptimised builds while still catching per-sample setup costs.
    QVERIFY2(seconds < 10.0, qPrintable(QString::number(seconds)));
  }

  void invalidConfigsAndRangesThrow() {
    auto withBlobs = [](auto change) {
      DatasetConfig c = smallConfig("gaussian_blobs");
      change(c);
      return c;
    };
    auto of = [](std::string kind, auto change) {
      DatasetConfig c = smallConfig(kind);
      change(c);
      return c;
    };
    const DatasetConfig bad[] = {
        withBlobs([](DatasetConfig& c) { c.trainSize = 0; }),
        withBlobs([](DatasetConfig& c) { c.testSize = -1; }),
        withBlobs([](DatasetConfig& c) { c.classes = 1; }),
        withBlobs([](DatasetConfig& c) { c.features = 0; }),
        withBlobs([](DatasetConfig& c) { c.parameters.set("noise", -0.1); }),
        withBlobs([](DatasetConfig& c) { c.parameters.set("separation", NAN); }),
        of("two_spirals", [](DatasetConfig& c) { c.classes = 1; }),
        of("two_spirals", [](DatasetConfig& c) { c.parameters.set("turns", 0.0); }),
        of("checkerboard", [](DatasetConfig& c) { c.parameters.set("grid_size", int64_t{1}); }),
        of("teacher", [](DatasetConfig& c) { c.parameters.set("label_noise", 1.5); }),
        of("teacher", [](DatasetConfig& c) { c.parameters.set("teacher_width", int64_t{0}); }),
        of("teacher", [](DatasetConfig& c) { c.parameters.set("teacher_depth", int64_t{-1}); }),
        of("teacher",
           [](DatasetConfig& c) {
             c.parameters.set("teacher_width", int64_t{65536});
             c.parameters.set("teacher_depth", int64_t{16});
           }),
        of("linear_regression", [](DatasetConfig& c) { c.features = 0; }),
        of("shapes", [](DatasetConfig& c) { c.parameters.set("noise", INFINITY); }),
    };
    for (const DatasetConfig& c : bad) QVERIFY_THROWS_EXCEPTION(dtlab::Error, makeDataset(c));
    try {
      makeDataset(withBlobs([](DatasetConfig& c) { c.classes = 1; }));
      QFAIL("no exception");
    } catch (const dtlab::Error& e) {
      QVERIFY2(QString(e.what()).contains("classes"), e.what());
    }

    const auto d = makeDataset(smallConfig("gaussian_blobs", 100, 10));
    std::vector<float> x(32 * 20);
    std::vector<float> y(20);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->generate(Split::kTest, 0, 11, x.data(), y.data()));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->generate(Split::kTrain, -1, 2, x.data(), y.data()));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->generate(Split::kTrain, 95, 6, x.data(), y.data()));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->label(Split::kTrain, 100));
    const int64_t outside[] = {3, 100};
    Tensor tx;
    Tensor ty;
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, d->gather(Split::kTrain, outside, tx, ty));
    // Empty ranges are fine, including at the end.
    d->generate(Split::kTrain, 100, 0, x.data(), y.data());
    d->gather(Split::kTrain, {}, tx, ty);
    QCOMPARE(tx.rows(), 0);
  }
};

QTEST_APPLESS_MAIN(TestDatasets)
#include "test_datasets.moc"
