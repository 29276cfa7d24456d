// The sequence dataset kinds (core/data/sequences.cc): their shapes, counter-based samples
// whose targets are the next tokens (language) or the inputs in order or reversed (copy), the
// language's stated loss floor against the entropy measured on its samples, the spec's
// refusals, and training scored per token: the loss and accuracy are means over every label,
// a model reaches the floor, several ranks equal one replica on the whole batch.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "core/data/dataset_kinds.h"
#include "core/spec/spec_json.h"
#include "tests/core/rank_threads.h"
#include "tests/support/specs.h"

using namespace dtlab::core;
using nlohmann::json;

namespace {

DatasetConfig datasetOf(const json& dataset) {
  return parseDatasetSection(dataset, 1);
}

struct Samples {
  std::vector<float> x, y;
};

Samples generate(const Dataset& d, Split split, int64_t begin, int64_t count) {
  Samples s;
  s.x.resize(static_cast<std::size_t>(count * d.features()));
  s.y.resize(static_cast<std::size_t>(count * d.targets()));
  d.generate(split, begin, count, s.x.data(), s.y.data());
  return s;
}

// The Zipf law's entropy, computed here on its own: -sum p ln p, p ~ 1 / (r + 1)^s.
double zipfEntropy(int64_t vocabulary, double s) {
  double total = 0.0;
  for (int64_t r = 0; r < vocabulary; ++r) total += std::pow(static_cast<double>(r + 1), -s);
  double h = 0.0;
  for (int64_t r = 0; r < vocabulary; ++r) {
    const double p = std::pow(static_cast<double>(r + 1), -s) / total;
    h -= p * std::log(p);
  }
  return h;
}

// One replica (or `world` ranks) of an MLP on a sequence dataset.
ExperimentSpec sequenceSpec(json dataset, int64_t steps) {
  ExperimentSpec spec = test::smallBlobsSpec(steps, steps);
  spec.dataset = datasetOf(std::move(dataset));
  spec.model.hidden = {64};
  spec.optimizer.kind = OptimizerKind::kAdam;
  spec.optimizer.lr = 0.01f;
  spec.optimizer.momentum = 0.0f;
  return spec;
}

class Evals final : public MetricSink {
 public:
  void onEval(const EvalMetrics& m) override { evals.push_back(m); }
  std::vector<EvalMetrics> evals;
};

}  // namespace

class TestSequences : public QObject {
  Q_OBJECT
 private slots:
  void theirShapes() {
    const SampleShape language = sampleShapeOf(datasetOf({{"kind", "language"}}));
    QCOMPARE(language.features, int64_t{32});
    QCOMPARE(language.targets, int64_t{32});
    QCOMPARE(language.vocabulary, int64_t{64});
    QCOMPARE(language.outputs, int64_t{32 * 64});
    QCOMPARE(language.classes(), int64_t{64});
    QVERIFY(language.tokens() && !language.image());
    const SampleShape copy =
        sampleShapeOf(datasetOf({{"kind", "copy"}, {"features", 10}, {"classes", 7}}));
    QCOMPARE(copy.targets, int64_t{10});
    QCOMPARE(copy.outputs, int64_t{70});
    // The other kinds: one label, no tokens.
    const SampleShape blobs = sampleShapeOf(datasetOf({{"kind", "gaussian_blobs"}}));
    QCOMPARE(blobs.targets, int64_t{1});
    QVERIFY(!blobs.tokens());
  }

  void languageTargetsAreTheNextTokens() {
    const auto d = makeDataset(
        datasetOf({{"kind", "language"}, {"features", 12}, {"classes", 50}, {"ngram", 3}}));
    QCOMPARE(d->targets(), int64_t{12});
    const Samples s = generate(*d, Split::kTrain, 0, 200);
    for (int64_t i = 0; i < 200; ++i)
      for (int64_t t = 0; t < 12; ++t) {
        const float x = s.x[static_cast<std::size_t>(i * 12 + t)];
        QVERIFY(x >= 0.0f && x < 50.0f && x == std::floor(x));
        if (t + 1 < 12)
          QCOMPARE(s.y[static_cast<std::size_t>(i * 12 + t)],
                   s.x[static_cast<std::size_t>(i * 12 + t + 1)]);
      }
    // Counter-based: any range, any order of indices, gives the same sample.
    const Samples part = generate(*d, Split::kTrain, 150, 50);
    QVERIFY(std::equal(part.x.begin(), part.x.end(), s.x.begin() + 150 * 12));
    QVERIFY(std::equal(part.y.begin(), part.y.end(), s.y.begin() + 150 * 12));
    std::vector<int64_t> indices = {199, 3, 77};
    std::vector<float> x(3 * 12), y(3 * 12);
    d->generateIndices(Split::kTrain, indices, x.data(), y.data());
    for (std::size_t k = 0; k < indices.size(); ++k)
      QVERIFY(std::equal(y.begin() + static_cast<long>(k * 12),
                         y.begin() + static_cast<long>(k * 12 + 12),
                         s.y.begin() + indices[k] * 12));
    // The test split is another stream; the first target is the label partitions use.
    const Samples test = generate(*d, Split::kTest, 0, 200);
    QVERIFY(test.x != s.x);
    QCOMPARE(d->label(Split::kTrain, 77), static_cast<int64_t>(s.y[77 * 12]));
  }

  void theLanguagesFloorIsTheEntropyOfItsSamples() {
    // A bigram teacher over 16 tokens: the next token's entropy given the one before, counted
    // over 200k pairs, is the floor the dataset states, which is the Zipf law's entropy; and
    // each context's next tokens, sorted by frequency, follow that law.
    const int64_t vocabulary = 16;
    const auto d = makeDataset(datasetOf({{"kind", "language"},
                                          {"features", 20},
                                          {"classes", vocabulary},
                                          {"ngram", 2},
                                          {"zipf", 1.2},
                                          {"train_size", 10000}}));
    const double floor = d->lossFloor().value();
    QVERIFY2(std::abs(floor - zipfEntropy(vocabulary, 1.2)) < 1e-6,
             qPrintable(QString::number(floor)));
    const Samples s = generate(*d, Split::kTrain, 0, 10000);
    std::vector<std::vector<double>> counts(vocabulary, std::vector<double>(vocabulary, 0.0));
    for (int64_t i = 0; i < 10000; ++i)
      for (int64_t t = 0; t < 20; ++t) {
        const auto before = static_cast<std::size_t>(s.x[static_cast<std::size_t>(i * 20 + t)]);
        const auto next = static_cast<std::size_t>(s.y[static_cast<std::size_t>(i * 20 + t)]);
        counts[before][next] += 1.0;
      }
    double pairs = 0.0, conditional = 0.0, worstRankGap = 0.0;
    std::vector<double> law(vocabulary);
    for (int64_t r = 0; r < vocabulary; ++r)
      law[static_cast<std::size_t>(r)] = std::pow(r + 1.0, -1.2);
    const double lawTotal = std::accumulate(law.begin(), law.end(), 0.0);
    for (std::vector<double>& row : counts) {
      const double n = std::accumulate(row.begin(), row.end(), 0.0);
      pairs += n;
      for (double c : row)
        if (c > 0.0) conditional -= c * std::log(c / n);
      std::sort(row.begin(), row.end(), std::greater<>());
      for (std::size_t r = 0; r < row.size(); ++r)
        worstRankGap = std::max(worstRankGap, std::abs(row[r] / n - law[r] / lawTotal));
    }
    conditional /= pairs;
    QVERIFY2(std::abs(conditional - floor) < 0.01 * floor,
             qPrintable(QString("measured %1 nats, floor %2").arg(conditional).arg(floor)));
    QVERIFY2(worstRankGap < 0.01, qPrintable(QString::number(worstRankGap)));
    // The floor discriminates: a flatter law is less predictable.
    QVERIFY(makeDataset(datasetOf({{"kind", "language"}, {"classes", vocabulary}, {"zipf", 0.5}}))
                ->lossFloor()
                .value() > floor + 0.2);
  }

  void copyTargetsAreTheInputsInOrderOrReversed() {
    for (const char* order : {"same", "reversed"}) {
      const auto d = makeDataset(
          datasetOf({{"kind", "copy"}, {"features", 9}, {"classes", 5}, {"order", order}}));
      QCOMPARE(d->lossFloor().value_or(-1.0), 0.0);
      const Samples s = generate(*d, Split::kTest, 40, 30);
      for (int64_t i = 0; i < 30; ++i)
        for (int64_t t = 0; t < 9; ++t) {
          const int64_t from = std::string(order) == "same" ? t : 8 - t;
          QCOMPARE(s.y[static_cast<std::size_t>(i * 9 + t)],
                   s.x[static_cast<std::size_t>(i * 9 + from)]);
        }
    }
  }

  void badSequenceSettingsAreRefusedWhereTheyAre() {
    const auto refused = [](json dataset) {
      const auto e = test::specErrorOf({{"dataset", std::move(dataset)}});
      return e ? e->path() : std::string("accepted");
    };
    QCOMPARE(refused({{"kind", "language"}, {"features", 5000}}), std::string("dataset.features"));
    QCOMPARE(refused({{"kind", "copy"}, {"features", 0}}), std::string("dataset.features"));
    QCOMPARE(refused({{"kind", "language"}, {"ngram", 7}}), std::string("dataset.ngram"));
    QCOMPARE(refused({{"kind", "language"}, {"zipf", 5}}), std::string("dataset.zipf"));
    QCOMPARE(refused({{"kind", "copy"}, {"order", "sideways"}}), std::string("dataset.order"));
    QCOMPARE(refused({{"kind", "copy"}, {"classes", 1}}), std::string("dataset.classes"));
    // The size cap counts a target per token: 20M samples of 32 tokens and 32 targets are 4.8 GiB.
    const auto big = test::specErrorOf(
        {{"dataset", {{"kind", "language"}, {"train_size", 20000000}, {"test_size", 1}}}});
    QVERIFY2(big && big->path() == "dataset.train_size", big ? big->what() : "accepted");
    QVERIFY2(std::string(big->what()).find("features + targets") != std::string::npos, big->what());
  }

  void anMlpSeesTooMuchOfANextTokenSequence() {
    // It would read each next token from its input: refused where the spec names the model,
    // and where a config built in code makes it.
    const auto e = test::specErrorOf(
        {{"dataset", {{"kind", "language"}, {"features", 8}}}, {"model", {{"kind", "mlp"}}}});
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("model.kind"));
    QVERIFY2(std::string(e->what()).find("causal model") != std::string::npos, e->what());
    ExperimentSpec spec = sequenceSpec({{"kind", "language"}, {"features", 1}}, 1);
    spec.dataset.features = 8;
    const WorkerResult r = test::runOnRanks(spec, 1)[0];
    QVERIFY(r.status == RunStatus::kFailed);
    QVERIFY2(r.error.find("causal model") != std::string::npos, r.error.c_str());
    // The copy's targets are no next tokens: an MLP may see them all.
    QVERIFY(!test::specErrorOf({{"dataset", {{"kind", "copy"}}}, {"model", {{"kind", "mlp"}}}}));
  }

  void aModelReachesTheFloorScoredPerToken() {
    // A unigram language (order 1) over 8 tokens, one token in and the next out: its law is
    // learnt by the output biases alone, and the test loss, a mean per token, comes within 3%
    // of the floor (an MLP reading token ids as numbers gets only halfway from the unigram to
    // the floor of a bigram language: that is the transformer's to learn); the accuracy per
    // token is the law's top probability; the perplexity is exp(loss).
    ExperimentSpec spec = sequenceSpec({{"kind", "language"},
                                        {"features", 1},
                                        {"classes", 8},
                                        {"ngram", 1},
                                        {"zipf", 1.2},
                                        {"train_size", 8192},
                                        {"test_size", 4096}},
                                       1500);
    spec.optimizer.lr = 0.002f;  // the input's scale (token ids up to 7) makes 0.01 noisy
    spec.training.evalInterval = 100;
    Evals evals;
    const WorkerResult r = test::runOnRanks(spec, 1, &evals)[0];
    QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    const double floor = zipfEntropy(8, 1.2);
    const double loss = r.finalTestLoss.value_or(0.0);
    QString curve;
    for (const EvalMetrics& m : evals.evals) curve += QString(" %1").arg(m.testLoss);
    QVERIFY2(
        loss > 0.97 * floor && loss < 1.03 * floor,
        qPrintable(QString("test loss %1 per token, floor %2;%3").arg(loss).arg(floor).arg(curve)));
    double top = 0.0;
    for (int64_t k = 0; k < 8; ++k) top += std::pow(k + 1.0, -1.2);
    top = 1.0 / top;
    QVERIFY2(std::abs(r.finalTestAccuracy.value_or(0.0) - top) < 0.03,
             qPrintable(QString("accuracy %1, the top token's share %2")
                            .arg(r.finalTestAccuracy.value_or(0.0))
                            .arg(top)));
    QVERIFY(!evals.evals.empty());
    for (const EvalMetrics& m : evals.evals)
      QVERIFY(std::abs(m.testPerplexity - std::exp(m.testLoss)) < 1e-9 * m.testPerplexity);
  }

  void anMlpLearnsToReverse() {
    // The reversed copy needs every position's token at another position: an MLP sees them
    // all. Each of the 6 positions' labels is scored on its own output block.
    ExperimentSpec spec = sequenceSpec({{"kind", "copy"},
                                        {"features", 6},
                                        {"classes", 6},
                                        {"train_size", 8192},
                                        {"test_size", 1024}},
                                       1500);
    spec.model.hidden = {128};
    spec.training.evalInterval = 250;
    spec.training.targetAccuracy = 0.99;
    Evals evals;
    const WorkerResult r = test::runOnRanks(spec, 1, &evals)[0];
    // The loss is a mean per token: never above a guess's ln 6 by much (summed over a sample's
    // six labels it would start near 6 ln 6).
    QVERIFY(!evals.evals.empty());
    for (const EvalMetrics& m : evals.evals)
      QVERIFY2(m.testLoss < 1.2 * std::log(6.0), qPrintable(QString::number(m.testLoss)));
    QVERIFY2(r.finalTestAccuracy.value_or(0.0) >= 0.99,
             qPrintable(QString("accuracy %1 per token after %2 steps")
                            .arg(r.finalTestAccuracy.value_or(0.0))
                            .arg(r.steps)));
  }

  void syncOnFourRanksEqualsOneReplicaOnTheWholeBatch() {
    // Each label's gradient is scaled by 1 / (global batch x targets) on every rank alike.
    ExperimentSpec spec = sequenceSpec({{"kind", "copy"}, {"features", 16}, {"classes", 32}}, 30);
    spec.optimizer.kind = OptimizerKind::kSgd;
    spec.optimizer.lr = 0.05f;
    spec.optimizer.momentum = 0.9f;
    const double apart = test::fourRanksApartFromOne(spec);
    QVERIFY2(apart < 1e-4, qPrintable(QString::number(apart)));
  }
};

QTEST_GUILESS_MAIN(TestSequences)
#include "test_sequences.moc"
