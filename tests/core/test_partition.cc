#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/common/check.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/data/partition.h"

using dtlab::core::classCounts;
using dtlab::core::Dataset;
using dtlab::core::DatasetConfig;
using dtlab::core::makeDataset;
using dtlab::core::PartitionConfig;
using dtlab::core::PartitionKind;
using dtlab::core::partitionTrain;
using dtlab::core::Split;

namespace {

using Shards = std::vector<std::vector<int64_t>>;

std::unique_ptr<Dataset> blobs(int64_t train, int64_t classes = 10) {
  DatasetConfig c;
  c.trainSize = train;
  c.testSize = 10;
  c.classes = classes;
  c.features = 4;
  c.seed = 3;
  return makeDataset(c);
}

PartitionConfig iid(uint64_t seed = 5) {
  PartitionConfig p;
  p.seed = seed;
  return p;
}

PartitionConfig dirichlet(double alpha, uint64_t seed = 5) {
  PartitionConfig p;
  p.kind = PartitionKind::kDirichlet;
  p.alpha = alpha;
  p.seed = seed;
  return p;
}

PartitionConfig unequal(std::vector<double> weights) {
  PartitionConfig p;
  p.kind = PartitionKind::kUnequal;
  p.weights = std::move(weights);
  p.seed = 5;
  return p;
}

// True when the shards together hold each of [0, n) exactly once.
bool isPartition(const Shards& shards, int64_t n) {
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  for (const auto& shard : shards) {
    for (int64_t i : shard) {
      if (i < 0 || i >= n || seen[i]++ != 0) return false;
    }
  }
  return std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; });
}

// Mean over shards of the share of the shard's most common class.
double meanMaxClassShare(const Shards& counts) {
  double sum = 0.0;
  for (const auto& row : counts) {
    int64_t total = 0;
    for (int64_t c : row) total += c;
    sum +=
        static_cast<double>(*std::max_element(row.begin(), row.end())) / static_cast<double>(total);
  }
  return sum / static_cast<double>(counts.size());
}

}  // namespace

class TestPartition : public QObject {
  Q_OBJECT
 private slots:
  void everySampleInExactlyOneShard() {
    const auto d = blobs(10007);
    const int64_t n = d->size(Split::kTrain);
    for (int workers : {1, 2, 3, 7, 16}) {
      std::vector<double> weights;
      for (int w = 0; w < workers; ++w) weights.push_back(1.0 + w % 4);
      for (const PartitionConfig& config :
           {iid(), dirichlet(0.05), dirichlet(1.0), dirichlet(100.0), unequal(weights)}) {
        const Shards shards = partitionTrain(*d, workers, config);
        QCOMPARE(static_cast<int>(shards.size()), workers);
        QVERIFY2(isPartition(shards, n),
                 qPrintable(QString("%1, %2 workers").arg(toString(config.kind)).arg(workers)));
      }
    }
    // More workers than samples: still a partition, some shards empty.
    const auto tiny = blobs(5);
    const Shards shards = partitionTrain(*tiny, 8, iid());
    QVERIFY(isPartition(shards, 5));
  }

  void deterministicAndSeeded() {
    const auto d = blobs(5000);
    for (const PartitionConfig& config : {iid(), dirichlet(0.5), unequal({1, 2, 3})}) {
      const Shards a = partitionTrain(*d, 3, config);
      QVERIFY(a == partitionTrain(*d, 3, config));
      PartitionConfig reseeded = config;
      reseeded.seed = config.seed + 1;
      QVERIFY(a != partitionTrain(*d, 3, reseeded));
    }
  }

  void shardOrderIsShuffled() {
    const auto d = blobs(4000);
    for (const PartitionConfig& config : {iid(), dirichlet(0.5)}) {
      for (const auto& shard : partitionTrain(*d, 4, config)) {
        QVERIFY(shard.size() > 100);
        QVERIFY(!std::is_sorted(shard.begin(), shard.end()));
        // Not sorted by class either: neighbours often differ in class.
        int64_t changes = 0;
        for (std::size_t k = 1; k < shard.size(); ++k)
          changes += d->label(Split::kTrain, shard[k]) != d->label(Split::kTrain, shard[k - 1]);
        QVERIFY(static_cast<double>(changes) > 0.3 * static_cast<double>(shard.size()));
      }
    }
  }

  void iidShardsAreEqualAndLookLikeTheWhole() {
    const auto d = blobs(20003);
    const Shards shards = partitionTrain(*d, 8, iid());
    std::size_t smallest = SIZE_MAX;
    std::size_t largest = 0;
    for (const auto& shard : shards) {
      smallest = std::min(smallest, shard.size());
      largest = std::max(largest, shard.size());
    }
    QVERIFY(largest - smallest <= 1);
    // Each shard's class shares are within a few standard errors of the global 1/10.
    const Shards counts = classCounts(*d, shards);
    for (std::size_t w = 0; w < shards.size(); ++w) {
      for (int64_t c : counts[w]) {
        const double share = static_cast<double>(c) / static_cast<double>(shards[w].size());
        QVERIFY2(std::abs(share - 0.1) < 0.025, qPrintable(QString::number(share)));
      }
    }
  }

  void dirichletAlphaControlsSkew() {
    const auto d = blobs(20000);
    const double skewed = meanMaxClassShare(classCounts(*d, partitionTrain(*d, 8, dirichlet(0.1))));
    const double mild = meanMaxClassShare(classCounts(*d, partitionTrain(*d, 8, dirichlet(1.0))));
    const Shards flatCounts = classCounts(*d, partitionTrain(*d, 8, dirichlet(100.0)));
    const double flat = meanMaxClassShare(flatCounts);
    qInfo("mean largest-class share per shard: alpha 0.1: %.3f, 1: %.3f, 100: %.3f", skewed, mild,
          flat);
    QVERIFY(skewed > 0.45);
    QVERIFY(mild < skewed && flat < mild);
    QVERIFY(flat < 0.15);
    // Large alpha is close to IID: every class share near 1/10 in every shard.
    for (const auto& row : flatCounts) {
      int64_t total = 0;
      for (int64_t c : row) total += c;
      for (int64_t c : row) {
        QVERIFY(std::abs(static_cast<double>(c) / static_cast<double>(total) - 0.1) < 0.04);
      }
    }
  }

  void dirichletLeavesNoWorkerEmpty() {
    // Extreme skew with many workers: raw draws leave most workers without a class.
    const auto d = blobs(3000, 4);
    for (double alpha : {0.01, 1e-6}) {
      const Shards shards = partitionTrain(*d, 16, dirichlet(alpha));
      QVERIFY(isPartition(shards, 3000));
      for (const auto& shard : shards) QVERIFY(!shard.empty());
      // The rebalance is minimal: a worker that was empty receives one sample.
      const auto smallest =
          std::min_element(shards.begin(), shards.end(),
                           [](const auto& a, const auto& b) { return a.size() < b.size(); });
      QCOMPARE(smallest->size(), std::size_t{1});
    }
    // Exactly as many samples as workers: one each.
    const auto few = blobs(6, 3);
    for (const auto& shard : partitionTrain(*few, 6, dirichlet(0.01)))
      QCOMPARE(shard.size(), std::size_t{1});
  }

  void unequalSizesFollowWeights() {
    const auto d = blobs(10000);
    const Shards exact = partitionTrain(*d, 4, unequal({1, 2, 3, 4}));
    QCOMPARE(exact[0].size(), std::size_t{1000});
    QCOMPARE(exact[1].size(), std::size_t{2000});
    QCOMPARE(exact[2].size(), std::size_t{3000});
    QCOMPARE(exact[3].size(), std::size_t{4000});
    // Sizes that cannot be exact are within one of n * w / sum(w) and sum to n.
    const std::vector<double> weights = {0.3, 1.7, 2.0, 0.01, 5.5, 1.0 / 3.0};
    const auto odd = blobs(9973);
    const Shards shards = partitionTrain(*odd, 6, unequal(weights));
    double sum = 0.0;
    for (double w : weights) sum += w;
    std::size_t total = 0;
    for (std::size_t w = 0; w < weights.size(); ++w) {
      const double target = 9973.0 * weights[w] / sum;
      QVERIFY2(std::abs(static_cast<double>(shards[w].size()) - target) < 1.0,
               qPrintable(QString("%1 vs %2").arg(shards[w].size()).arg(target)));
      total += shards[w].size();
    }
    QCOMPARE(total, std::size_t{9973});
  }

  void classCountsAddUp() {
    const auto d = blobs(1234, 7);
    const Shards shards = partitionTrain(*d, 5, dirichlet(0.3));
    const Shards counts = classCounts(*d, shards);
    QCOMPARE(counts.size(), std::size_t{5});
    std::vector<int64_t> perClass(7, 0);
    for (std::size_t w = 0; w < counts.size(); ++w) {
      QCOMPARE(counts[w].size(), std::size_t{7});
      int64_t total = 0;
      for (int64_t c = 0; c < 7; ++c) {
        total += counts[w][c];
        perClass[c] += counts[w][c];
      }
      QCOMPARE(total, static_cast<int64_t>(shards[w].size()));
    }
    // Blobs are balanced to within one sample: 1234 = 7 * 176 + 2.
    for (int64_t c = 0; c < 7; ++c) QCOMPARE(perClass[c], c < 2 ? 177 : 176);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, classCounts(*d, Shards{{0, 1234}}));
  }

  void teacherLabelsPartitionToo() {
    // The teacher has no index-only label shortcut, so this runs its generated labels.
    DatasetConfig c;
    c.kind = "teacher";
    c.trainSize = 3000;
    c.seed = 11;
    const auto d = makeDataset(c);
    const Shards shards = partitionTrain(*d, 4, dirichlet(0.1));
    QVERIFY(isPartition(shards, 3000));
    const Shards counts = classCounts(*d, shards);
    for (std::size_t w = 0; w < shards.size(); ++w) {
      for (std::size_t k = 0; k < shards[w].size(); k += 50) {
        QVERIFY(counts[w][d->label(Split::kTrain, shards[w][k])] > 0);
      }
    }
    QVERIFY(meanMaxClassShare(counts) > 0.4);
  }

  void badInputsThrow() {
    const auto d = blobs(100);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 0, iid()));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, -2, iid()));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 3, unequal({1, 2})));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, unequal({1, 0})));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, unequal({1, -1})));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, unequal({1, NAN})));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, unequal({1, INFINITY})));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, dirichlet(0.0)));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, dirichlet(-1.0)));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*d, 2, dirichlet(NAN)));
    try {
      partitionTrain(*d, 3, unequal({1, 2}));
      QFAIL("no exception");
    } catch (const dtlab::Error& e) {
      QVERIFY2(QString(e.what()).contains("weight"), e.what());
    }
    // Label skew means nothing for regression.
    DatasetConfig regression;
    regression.kind = "linear_regression";
    regression.trainSize = 100;
    const auto r = makeDataset(regression);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, partitionTrain(*r, 2, dirichlet(0.5)));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, classCounts(*r, Shards{{0}}));
    QVERIFY(isPartition(partitionTrain(*r, 3, iid()), 100));
  }
};

QTEST_APPLESS_MAIN(TestPartition)
#include "test_partition.moc"
