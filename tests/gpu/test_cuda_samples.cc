// Synthetic samples generated on the GPU (Backend::makeSampleSource) against the same samples
// generated on the host (Dataset::generateIndices): every kind, both splits, scattered
// indices. Both sides run one function (datagen::generateSample), so labels and the integer
// draws agree exactly and features to the last places of the math libraries' sin, cos, log
// and tanh. Then a GPU worker, whose training rows are made on the device, against a CPU
// worker, training rows and test split. Without a GPU (or in a build without CUDA) the GPU cases
// skip with the reason.
#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/train/worker.h"
#include "tests/gpu/gpu_available.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

DatasetConfig configOf(std::string kind, float noise) {
  DatasetConfig c;
  c.kind = kind;
  c.trainSize = 50000;
  c.testSize = 5000;
  c.seed = 77;
  if (kind == "teacher")
    c.parameters.set("label_noise", 0.1 * noise);
  else
    c.parameters.set("noise", double{noise});
  if (kind == "two_spirals") c.classes = 3;
  return c;
}

// `count` distinct-enough indices spread over a split, in no particular order.
std::vector<int64_t> scattered(int64_t count, int64_t size, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> v(static_cast<std::size_t>(count));
  for (int64_t& i : v) i = static_cast<int64_t>(rng.below(static_cast<uint64_t>(size)));
  v.front() = 0;
  v.back() = size - 1;
  return v;
}

struct Rows {
  std::vector<float> x;
  std::vector<float> y;
};

Rows onHost(const Dataset& d, Split split, const std::vector<int64_t>& indices) {
  Rows r{std::vector<float>(indices.size() * static_cast<std::size_t>(d.features())),
         std::vector<float>(indices.size())};
  d.generateIndices(split, indices, r.x.data(), r.y.data());
  return r;
}

Rows onDevice(Backend& gpu, SampleSource& source, int64_t features, Split split,
              const std::vector<int64_t>& indices) {
  const auto n = static_cast<int64_t>(indices.size());
  float* x = gpu.allocate(n * features);
  float* y = gpu.allocate(n);
  source.generate(split, indices, x, y);
  Rows r{std::vector<float>(static_cast<std::size_t>(n * features)),
         std::vector<float>(static_cast<std::size_t>(n))};
  gpu.download(r.x.data(), x, n * features);
  gpu.download(r.y.data(), y, n);
  gpu.release(x);
  gpu.release(y);
  return r;
}

// Features within 1e-4 of the host's (relative above 1); labels equal but for at most
// `labelSlack` of them (the teacher's argmax may tip on a near tie). Says where it fails.
void expectSameRows(const Rows& device, const Rows& host, double labelSlack, const char* what) {
  QCOMPARE(device.x.size(), host.x.size());
  std::size_t exact = 0;
  for (std::size_t i = 0; i < host.x.size(); ++i) {
    const double a = device.x[i];
    const double b = host.x[i];
    QVERIFY2(std::abs(a - b) <= 1e-4 * std::max(1.0, std::abs(b)),
             qPrintable(QString("%1: feature %2 is %3 on the GPU, %4 on the host")
                            .arg(what)
                            .arg(i)
                            .arg(a, 0, 'g', 9)
                            .arg(b, 0, 'g', 9)));
    exact += a == b ? 1 : 0;
  }
  // A class differs by at least 1; a regression target by more than float rounding.
  std::size_t differing = 0;
  for (std::size_t k = 0; k < host.y.size(); ++k) {
    const double tolerance = 1e-4 * std::max(1.0, std::abs(static_cast<double>(host.y[k])));
    if (std::abs(static_cast<double>(device.y[k]) - host.y[k]) > tolerance) ++differing;
  }
  QVERIFY2(static_cast<double>(differing) <= labelSlack * static_cast<double>(host.y.size()),
           qPrintable(
               QString("%1: %2 of %3 labels differ").arg(what).arg(differing).arg(host.y.size())));
  qInfo("%s: %zu of %zu features bit-identical, %zu labels differ", what, exact, host.x.size(),
        differing);
}

}  // namespace

class TestCudaSamples : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> gpu_;

 private slots:
  void init() {
    gpu_.reset();
    if (test::whyNoGpu().empty()) gpu_ = makeBackend("cuda:0", 1);
  }

  // Runs everywhere: the CPU writes samples to its own memory through the dataset, so it
  // offers no source, and a worker there holds its rows on the host.
  void cpuLeavesSamplesToTheDataset() {
    auto cpu = makeBackend("cpu", 1);
    auto dataset = makeDataset(configOf("gaussian_blobs", 1.0f));
    QVERIFY(cpu->makeSampleSource(*dataset->program()) == nullptr);
  }

  void everyKindMatchesTheHost_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<float>("noise");
    const std::pair<std::string, const char*> kinds[] = {
        {"gaussian_blobs", "blobs"},         {"two_spirals", "spirals"},
        {"checkerboard", "checkerboard"},    {"teacher", "teacher"},
        {"linear_regression", "regression"}, {"shapes", "shapes"}};
    for (const auto& [kind, name] : kinds)
      for (float noise : {0.0f, 1.0f})
        QTest::addRow("%s, noise %g", name, static_cast<double>(noise))
            << QString::fromStdString(kind) << noise;
  }
  void everyKindMatchesTheHost() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, name);
    const std::string kind = name.toStdString();
    QFETCH(float, noise);
    auto dataset = makeDataset(configOf(kind, noise));
    auto source = gpu_->makeSampleSource(*dataset->program());
    QVERIFY(source != nullptr);
    const double slack = kind == "teacher" ? 1e-3 : 0.0;
    for (const Split split : {Split::kTrain, Split::kTest}) {
      const auto indices = scattered(3000, dataset->size(split), 11 + static_cast<int>(split));
      expectSameRows(onDevice(*gpu_, *source, dataset->features(), split, indices),
                     onHost(*dataset, split, indices), slack, toString(split));
    }
  }

  // The source copies the program's tables: it keeps working after its dataset is gone.
  void sourceOutlivesItsDataset() {
    SKIP_WITHOUT_GPU();
    const DatasetConfig config = configOf("teacher", 0.0f);
    auto dataset = makeDataset(config);
    auto source = gpu_->makeSampleSource(*dataset->program());
    dataset.reset();
    const auto fresh = makeDataset(config);
    const auto indices = scattered(2000, config.trainSize, 5);
    expectSameRows(onDevice(*gpu_, *source, fresh->features(), Split::kTrain, indices),
                   onHost(*fresh, Split::kTrain, indices), 1e-3, "teacher, dataset gone");
  }

  // A wide teacher needs more scratch per sample than one launch may hold (2 x 4096 floats a
  // sample, 2048 samples a launch): 5000 samples take three launches.
  void wideTeacherRunsInSeveralLaunches() {
    SKIP_WITHOUT_GPU();
    DatasetConfig config = configOf("teacher", 0.0f);
    config.features = 64;
    config.parameters.set("teacher_width", int64_t{4096});
    config.parameters.set("teacher_depth", int64_t{1});
    auto dataset = makeDataset(config);
    auto source = gpu_->makeSampleSource(*dataset->program());
    const auto indices = scattered(5000, config.trainSize, 9);
    expectSameRows(onDevice(*gpu_, *source, dataset->features(), Split::kTrain, indices),
                   onHost(*dataset, Split::kTrain, indices), 1e-3, "wide teacher");
  }

  // A GPU worker makes its rows on the device (none held on the host) and loads the CPU
  // worker's batches, for a single replica (whole shard) and one of two (per-epoch rows); its
  // test split, made on the device too, gives the CPU's loss and accuracy.
  void gpuWorkerLoadsTheCpuWorkersBatches() {
    SKIP_WITHOUT_GPU();
    ExperimentSpec spec;
    spec.seed = 3;
    spec.dataset = configOf("shapes", 1.0f);
    spec.dataset.trainSize = 2000;
    spec.model.hidden = {16};
    spec.training.batchSize = 64;
    auto dataset = makeDataset(spec.dataset);
    auto cpu = makeBackend("cpu", 1);
    std::vector<int64_t> shard(2000);
    std::iota(shard.begin(), shard.end(), int64_t{0});
    const int64_t features = dataset->features();
    for (int world : {1, 2}) {
      const BatchSlice slice = BatchSlice::equal(64, 0, world);
      Worker onCpu(spec, *cpu, *dataset, shard, slice, 0);
      Worker onGpu(spec, *gpu_, *dataset, shard, slice, 0);
      QCOMPARE(onGpu.trainingDataBytes(), int64_t{0});
      QVERIFY(onCpu.trainingDataBytes() > 0);
      Rows a{std::vector<float>(static_cast<std::size_t>(slice.count * features)),
             std::vector<float>(static_cast<std::size_t>(slice.count))};
      Rows b = a;
      for (int64_t step = 0; step < onCpu.stepsPerEpoch() + 2; ++step) {  // into epoch two
        onCpu.loadBatch();
        onGpu.loadBatch();
        cpu->download(a.x.data(), onCpu.batchInputs(), slice.count * features);
        cpu->download(a.y.data(), onCpu.batchTargets(), slice.count);
        gpu_->download(b.x.data(), onGpu.batchInputs(), slice.count * features);
        gpu_->download(b.y.data(), onGpu.batchTargets(), slice.count);
        expectSameRows(b, a, 0.0, qPrintable(QString("world %1, step %2").arg(world).arg(step)));
      }
      // The test split made on the device, evaluated there: the CPU's figures.
      EvalSet cpuSet(*dataset, Split::kTest, *cpu);
      EvalSet gpuSet(*dataset, Split::kTest, *gpu_);
      const Evaluation expected = onCpu.evaluate(cpuSet);
      const Evaluation e = onGpu.evaluate(gpuSet);
      QVERIFY(gpuSet.residentX() != nullptr);
      QVERIFY2(std::abs(e.loss - expected.loss) <= 1e-4 * std::abs(expected.loss),
               qPrintable(QString("test loss %1 on the GPU, %2 on the CPU")
                              .arg(e.loss, 0, 'g', 9)
                              .arg(expected.loss, 0, 'g', 9)));
      QVERIFY(std::abs(e.accuracy - expected.accuracy) <= 2.0 / 5000);  // a sample may tip
    }
  }
};

QTEST_APPLESS_MAIN(TestCudaSamples)
#include "test_cuda_samples.moc"
