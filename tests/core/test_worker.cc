// What a data-parallel worker holds and draws. A worker that takes part of each global
// batch generates only its slice of each epoch's global batches, so its training data
// shrinks as ranks are added (a single replica holds the whole shard); either way it
// must draw exactly the batches the whole-shard worker drew (materialise the shard
// once, take slice [begin, begin+count) of every global-batch window of a permutation
// that each epoch reshuffles): the sync trajectories depend on it.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/train/worker.h"
#include "tests/core/not_host_memory.h"

using namespace dtlab::core;
using dtlab::core::test::NotHostMemory;

namespace {

ExperimentSpec smallSpec(int64_t trainSize, int64_t features) {
  ExperimentSpec spec;
  spec.seed = 5;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = trainSize;
  spec.dataset.testSize = 64;
  spec.dataset.features = features;
  spec.dataset.classes = 3;
  spec.dataset.seed = 5;
  spec.model.hidden = {8};
  spec.training.batchSize = 64;
  return spec;
}

std::vector<int64_t> contiguous(int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

// The batches of the worker before it generated per epoch: the whole shard gathered up
// front, and every epoch the previous order of shard positions reshuffled (stream
// 0x5f0f, Fisher-Yates), with the tail that does not fill a global batch skipped.
class WholeShardReference {
 public:
  WholeShardReference(const Dataset& dataset, const std::vector<int64_t>& shard, uint64_t seed,
                      BatchSlice slice)
      : seed_(seed), slice_(slice), order_(shard.size()) {
    dataset.gather(Split::kTrain, shard, x_, y_);
    std::iota(order_.begin(), order_.end(), int64_t{0});
    cursor_ = static_cast<int64_t>(order_.size());
  }

  void next(std::vector<float>& x, std::vector<float>& y) {
    if (cursor_ + slice_.global > static_cast<int64_t>(order_.size())) {
      ++epoch_;
      Rng rng(deriveSeed(seed_, 0x5f0f, static_cast<uint64_t>(epoch_)));
      for (std::size_t i = order_.size(); i > 1; --i)
        std::swap(order_[i - 1], order_[rng.below(i)]);
      cursor_ = 0;
    }
    x.clear();
    y.clear();
    for (int64_t i = 0; i < slice_.count; ++i) {
      const int64_t pos = order_[static_cast<std::size_t>(cursor_ + slice_.begin + i)];
      x.insert(x.end(), x_.row(pos), x_.row(pos) + x_.cols());
      y.push_back(y_.data()[pos]);
    }
    cursor_ += slice_.global;
  }
  void setSlice(BatchSlice slice) { slice_ = slice; }

 private:
  uint64_t seed_;
  BatchSlice slice_;
  Tensor x_, y_;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0;
  int64_t epoch_ = -1;
};

}  // namespace

class TestWorker : public QObject {
  Q_OBJECT
 private slots:
  void drawsTheWholeShardBatches_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<std::vector<int64_t>>("shard");
    // 0..999: 15 global batches of 64 an epoch and a 40-sample tail to skip; 200..999:
    // 12 batches, tail 32; every third sample (334, not a range): 5 batches, tail 14.
    std::vector<int64_t> upper(800);
    std::iota(upper.begin(), upper.end(), int64_t{200});
    std::vector<int64_t> thirds;
    for (int64_t i = 2; i < 1000; i += 3) thirds.push_back(i);
    for (int world : {1, 2, 3, 4}) {
      QTest::addRow("world %d, samples 0..999", world) << world << contiguous(1000);
      QTest::addRow("world %d, samples 200..999", world) << world << upper;
      QTest::addRow("world %d, every third sample", world) << world << thirds;
    }
  }
  void drawsTheWholeShardBatches() {
    QFETCH(int, world);
    QFETCH(std::vector<int64_t>, shard);
    const ExperimentSpec spec = smallSpec(1000, 7);
    auto dataset = makeDataset(spec.dataset);
    CpuBackend backend(1);
    for (int rank = 0; rank < world; ++rank) {
      const BatchSlice slice = BatchSlice::equal(64, rank, world);
      Worker worker(spec, backend, *dataset, shard, slice, 0);
      WholeShardReference reference(*dataset, shard, spec.seed, slice);
      const int64_t features = dataset->features();
      std::vector<float> x(static_cast<std::size_t>(slice.count * features));
      std::vector<float> y(static_cast<std::size_t>(slice.count));
      std::vector<float> expectedX, expectedY;
      // Three epochs and a bit: the order of later epochs builds on the earlier ones.
      const int64_t steps = 3 * worker.stepsPerEpoch() + 2;
      for (int64_t step = 0; step < steps; ++step) {
        worker.loadBatch();
        reference.next(expectedX, expectedY);
        backend.download(x.data(), worker.batchInputs(), slice.count * features);
        backend.download(y.data(), worker.batchTargets(), slice.count);
        const QByteArray where =
            QByteArray("rank ") + QByteArray::number(rank) + " step " + QByteArray::number(step);
        QVERIFY2(std::memcmp(x.data(), expectedX.data(), x.size() * sizeof(float)) == 0,
                 where.constData());
        QVERIFY2(std::memcmp(y.data(), expectedY.data(), y.size() * sizeof(float)) == 0,
                 where.constData());
      }
      QCOMPARE(worker.epoch(), int64_t{3});
    }
  }

  // A slice that moves (the speed-proportional scheduler): on the CPU each batch is made on a
  // helper thread while the step before trains, for the slice of that moment. Moved at any
  // step (one before an epoch ends, one an epoch begins with, to nothing and back), the
  // worker still draws the reference's rows.
  void movingSlicesDrawTheReferenceRows_data() {
    QTest::addColumn<std::vector<int64_t>>("shard");
    QTest::addColumn<double>("prefetchMin");
    std::vector<int64_t> thirds;
    for (int64_t i = 2; i < 1000; i += 3) thirds.push_back(i);
    // 15 batches an epoch; 5. Made ahead always (these small batches take microseconds, under
    // the worker's threshold), or never.
    QTest::newRow("samples 0..999, ahead") << contiguous(1000) << 0.0;
    QTest::newRow("every third sample, ahead") << thirds << 0.0;
    QTest::newRow("samples 0..999, in loadBatch") << contiguous(1000) << 1e9;
  }
  void movingSlicesDrawTheReferenceRows() {
    QFETCH(std::vector<int64_t>, shard);
    QFETCH(double, prefetchMin);
    const ExperimentSpec spec = smallSpec(1000, 7);
    auto dataset = makeDataset(spec.dataset);
    CpuBackend backend(1);
    const BatchSlice first = BatchSlice::equal(64, 1, 2);
    Worker worker(spec, backend, *dataset, shard, first, 0);
    worker.setPrefetchMinSeconds(prefetchMin);
    WholeShardReference reference(*dataset, shard, spec.seed, first);
    const int64_t perEpoch = worker.stepsPerEpoch();
    // step -> the slice from that step on
    const std::map<int64_t, BatchSlice> moves = {{3, {64, 20, 44}},
                                                 {4, {64, 0, 60}},
                                                 {perEpoch - 1, {64, 10, 10}},
                                                 {perEpoch + 1, {64, 64, 0}},
                                                 {perEpoch + 3, {64, 1, 63}},
                                                 {2 * perEpoch, {64, 30, 34}}};
    const int64_t features = dataset->features();
    std::vector<float> x, y, expectedX, expectedY;
    for (int64_t step = 0; step < 3 * perEpoch + 2; ++step) {
      if (const auto move = moves.find(step); move != moves.end()) {
        worker.setSlice(move->second);
        reference.setSlice(move->second);
      }
      worker.loadBatch();
      reference.next(expectedX, expectedY);
      const int64_t count = worker.localBatch();
      QCOMPARE(static_cast<std::size_t>(count), expectedY.size());
      x.resize(static_cast<std::size_t>(count * features));
      y.resize(static_cast<std::size_t>(count));
      if (count == 0) continue;
      backend.download(x.data(), worker.batchInputs(), count * features);
      backend.download(y.data(), worker.batchTargets(), count);
      const QByteArray where = "step " + QByteArray::number(step);
      QVERIFY2(x == expectedX, where.constData());
      QVERIFY2(y == expectedY, where.constData());
    }
    // No epoch of rows held: a batch, or two when made ahead, of the widest slice so far (63).
    QCOMPARE(worker.trainingDataBytes(),
             (prefetchMin == 0.0 ? 2 : 1) * 63 * (features + 1) * int64_t{4});
  }

  // A scheduler's speed probe before the first step computes on the shard's first rows (no
  // more than the slice has room for) and changes neither the weights nor the batches drawn.
  void aProbeLeavesWeightsAndBatchesAlone() {
    const ExperimentSpec spec = smallSpec(1000, 7);
    auto dataset = makeDataset(spec.dataset);
    CpuBackend backend(1);
    const BatchSlice slice = BatchSlice::equal(64, 1, 2);
    Worker worker(spec, backend, *dataset, contiguous(1000), slice, 0);
    const std::vector<float> before = worker.model().paramsToHost();
    QVERIFY(!worker.warm());
    QCOMPARE(worker.loadProbe(1000), slice.count);
    worker.computeProbe(slice.count, nullptr);
    QVERIFY(worker.warm());
    std::vector<float> grads(worker.model().grads(),
                             worker.model().grads() + worker.model().parameterCount());
    QVERIFY(std::any_of(grads.begin(), grads.end(), [](float g) { return g != 0.0f; }));
    QVERIFY(worker.model().paramsToHost() == before);
    WholeShardReference reference(*dataset, contiguous(1000), spec.seed, slice);
    std::vector<float> x(static_cast<std::size_t>(slice.count * dataset->features()));
    std::vector<float> expectedX, expectedY;
    for (int step = 0; step < 3; ++step) {
      worker.loadBatch();
      reference.next(expectedX, expectedY);
      backend.download(x.data(), worker.batchInputs(), static_cast<int64_t>(x.size()));
      QVERIFY(x == expectedX);
    }
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, worker.loadProbe(8));  // it has trained
  }

  // A worker on a backend without host memory copies its held rows once (per epoch for a
  // slice) and gathers every batch there: the same batches as the reference, and no batch
  // uploaded per step; after a rebalance (per-batch rows) it uploads batches as the CPU does.
  // A backend with a sample source generates those rows in its own memory instead: the same
  // batches again, no training data uploaded at all and none held on the host.
  void residentRowsDrawTheSameBatches_data() {
    QTest::addColumn<bool>("withSource");
    QTest::newRow("rows made on the host") << false;
    QTest::newRow("rows made by the backend's source") << true;
  }
  void residentRowsDrawTheSameBatches() {
    QFETCH(bool, withSource);
    const ExperimentSpec spec = smallSpec(1000, 7);
    auto dataset = makeDataset(spec.dataset);
    const std::vector<int64_t> shard = contiguous(1000);
    for (int world : {1, 2}) {
      NotHostMemory backend(withSource);
      const BatchSlice slice = BatchSlice::equal(64, 0, world);
      Worker worker(spec, backend, *dataset, shard, slice, 0);
      WholeShardReference reference(*dataset, shard, spec.seed, slice);
      const int64_t features = dataset->features();
      std::vector<float> x(static_cast<std::size_t>(slice.count * features));
      std::vector<float> expectedX, expectedY;
      const int64_t steps = 2 * worker.stepsPerEpoch() + 3;  // three epochs begun
      const int64_t uploadsBefore = backend.uploads;
      for (int64_t step = 0; step < steps; ++step) {
        worker.loadBatch();
        reference.next(expectedX, expectedY);
        backend.download(x.data(), worker.batchInputs(), slice.count * features);
        QVERIFY2(std::memcmp(x.data(), expectedX.data(), x.size() * sizeof(float)) == 0,
                 qPrintable(QString("world %1, step %2").arg(world).arg(step)));
      }
      QCOMPARE(backend.gathers, 2 * steps);  // features and targets
      if (withSource) {
        // The whole shard made once; a slice's rows once for each of the three epochs.
        QCOMPARE(backend.generated, world == 1 ? int64_t{1000} : 3 * worker.stepsPerEpoch() * 32);
        QCOMPARE(backend.uploads, int64_t{1});  // the initial weights, no data
        QCOMPARE(worker.trainingDataBytes(), int64_t{0});
      } else {
        // The whole shard went over once, at construction; a slice's rows once per epoch (x, y).
        QCOMPARE(backend.uploads - uploadsBefore, world == 1 ? int64_t{0} : int64_t{2 * 3});
        QCOMPARE(backend.generated, int64_t{0});
      }
      if (world == 1) continue;
      // A rebalance: batches made one by one and uploaded, still the reference's rows.
      const BatchSlice wider{64, 0, 40};
      worker.setSlice(wider);
      WholeShardReference after(*dataset, shard, spec.seed, wider);
      for (int64_t step = 0; step < steps; ++step) after.next(expectedX, expectedY);
      const int64_t gathers = backend.gathers;
      worker.loadBatch();
      after.next(expectedX, expectedY);
      x.resize(static_cast<std::size_t>(wider.count * features));
      backend.download(x.data(), worker.batchInputs(), wider.count * features);
      QVERIFY(std::memcmp(x.data(), expectedX.data(), x.size() * sizeof(float)) == 0);
      QCOMPARE(backend.gathers, gathers);
      if (withSource) QCOMPARE(backend.uploads, int64_t{1});
    }
  }

  // The test split, on each kind of backend: the same loss and accuracy everywhere. A backend
  // that generates samples makes the set in its memory once (no copies, however many
  // evaluations); one that does not gets it copied at every evaluation.
  void evaluationSetsAgreeAndAreMadeOnce() {
    ExperimentSpec spec = smallSpec(1000, 7);
    spec.dataset.testSize = 2500;  // three evaluation chunks of 1024
    auto dataset = makeDataset(spec.dataset);
    CpuBackend cpu(1);
    Worker reference(spec, cpu, *dataset, contiguous(1000), BatchSlice::equal(64, 0, 1), 0);
    EvalSet onHost(*dataset, Split::kTest, cpu);
    const Evaluation expected = reference.evaluate(onHost);
    QCOMPARE(onHost.hostX().rows(), int64_t{2500});
    QVERIFY(expected.accuracy > 0.0 && expected.accuracy < 1.0);
    for (bool withSource : {false, true}) {
      NotHostMemory backend(withSource);
      Worker worker(spec, backend, *dataset, contiguous(1000), BatchSlice::equal(64, 0, 1), 0);
      EvalSet set(*dataset, Split::kTest, backend);
      const int64_t generatedBefore = backend.generated;
      const int64_t uploadsBefore = backend.uploads;
      for (int round = 0; round < 2; ++round) {
        const Evaluation e = worker.evaluate(set);
        QCOMPARE(e.loss, expected.loss);
        QCOMPARE(e.accuracy, expected.accuracy);
      }
      if (withSource) {
        QVERIFY(set.residentX() != nullptr);
        QCOMPARE(set.hostX().rows(), int64_t{0});
        QCOMPARE(backend.generated - generatedBefore, int64_t{2500});
        QCOMPARE(backend.uploads, uploadsBefore);
      } else {
        QVERIFY(set.residentX() == nullptr);
        QCOMPARE(backend.uploads - uploadsBefore, int64_t{2 * 2 * 3});  // x and y, 3 chunks, twice
      }
    }
  }

  void heldDataShrinksAsRanksAreAdded() {
    // 4096 samples of 32 features: 64 global batches of 64, no tail.
    const ExperimentSpec spec = smallSpec(4096, 32);
    auto dataset = makeDataset(spec.dataset);
    const int64_t bytesPerSample = (32 + 1) * static_cast<int64_t>(sizeof(float));
    const int64_t wholeSet = 4096 * bytesPerSample;
    CpuBackend backend(1);
    for (int world : {1, 2, 4}) {
      int64_t sum = 0;
      for (int rank = 0; rank < world; ++rank) {
        Worker worker(spec, backend, *dataset, contiguous(4096), BatchSlice::equal(64, rank, world),
                      0);
        worker.setPrefetchMinSeconds(0.0);  // these batches take microseconds: ahead anyway
        worker.loadBatch();
        // A single replica holds its whole shard; a slice two batches of its rows (the one
        // trained on and the next, made meanwhile).
        const int64_t held = worker.trainingDataBytes();
        QCOMPARE(held, world == 1 ? wholeSet : 2 * (64 / world) * bytesPerSample);
        sum += held;
        // The 0..n-1 sample list is not kept: what remains is the permutation (4 bytes a
        // sample) and the generator's index chunks: the whole shard's, at most 4096 entries,
        // or a batch's for each of the two batches made batch by batch.
        QCOMPARE(worker.sampleIndexBytes(),
                 4096 * int64_t{4} + (world == 1 ? 4096 : 2 * 64) * int64_t{8});
      }
      QCOMPARE(sum, world == 1 ? wholeSet : 2 * 64 * bytesPerSample);
    }
    // A sample list that is not a range is kept as given (8 bytes a sample).
    std::vector<int64_t> evens;
    for (int64_t i = 0; i < 4096; i += 2) evens.push_back(i);
    Worker worker(spec, backend, *dataset, evens, BatchSlice::equal(64, 0, 4), 0);
    QCOMPARE(worker.trainingDataBytes(), 16 * bytesPerSample);  // no batch made ahead yet
    QCOMPARE(worker.sampleIndexBytes(), 2048 * int64_t{4 + 8} + 64 * int64_t{8});  // no batch yet
  }

  void rejectsSamplesOutsideTheSplit() {
    const ExperimentSpec spec = smallSpec(1000, 7);
    auto dataset = makeDataset(spec.dataset);
    CpuBackend backend(1);
    std::vector<int64_t> shard = contiguous(999);
    shard.push_back(1000);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error,
                             Worker(spec, backend, *dataset, shard, BatchSlice::whole(64), 0));
  }
};

QTEST_APPLESS_MAIN(TestWorker)
#include "test_worker.moc"
