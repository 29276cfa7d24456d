// The cnn model kind: its layers and named tensors, the refusals of configs its samples cannot
// take, its gradient against finite differences as a whole, synchronous training on several
// ranks against one replica on the whole batch, every strategy training it, and the accuracy it
// reaches on shapes.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/common/random.h"
#include "core/nn/cnn.h"
#include "core/nn/model_kinds.h"
#include "core/nn/sequential.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using nlohmann::json;

namespace {

json shapesWith(json model) {
  return {{"dataset", {{"kind", "shapes"}, {"train_size", 4096}, {"test_size", 512}}},
          {"model", std::move(model)}};
}

// A small cnn on shapes for the training tests: 4 and 8 channels, a 32-wide dense layer.
ExperimentSpec smallCnnSpec(int64_t steps) {
  ExperimentSpec spec = test::smallBlobsSpec(steps, steps);
  const ExperimentSpec cnn = parseExperimentSpec(
      shapesWith({{"kind", "cnn"}, {"channels", 4}, {"blocks", 2}, {"hidden", {32}}}));
  spec.dataset = cnn.dataset;
  spec.model = cnn.model;
  spec.seed = 7;
  // 0.05 with momentum 0.9 is on the edge of stable for it: there rounding differences between
  // four slices and one batch grew to 2e-2 in 50 steps (the first build's layouts), at 0.02 to
  // 4e-8.
  spec.optimizer.lr = 0.02f;
  return spec;
}

}  // namespace

class TestCnn : public QObject {
  Q_OBJECT
 private slots:
  void itsLayersAndTensors() {
    const ExperimentSpec spec = parseExperimentSpec(shapesWith({{"kind", "cnn"}}));
    const SampleShape samples = sampleShapeOf(spec.dataset);
    QCOMPARE(samples.dims, (std::vector<int64_t>{1, 28, 28}));
    CpuBackend backend(1);
    const std::unique_ptr<Model> model = makeModel(backend, spec.model, samples);
    // 16 then 32 channels, 28 -> 14 -> 7, then the default hidden widths 128-128.
    std::vector<std::string> names;
    for (const ParameterTensor& t : model->tensors()) names.push_back(t.name);
    QCOMPARE(names,
             (std::vector<std::string>{"conv0.weight", "conv0.bias", "conv1.weight", "conv1.bias",
                                       "dense0.weight", "dense0.bias", "dense1.weight",
                                       "dense1.bias", "dense2.weight", "dense2.bias"}));
    QCOMPARE(model->tensors()[2].shape, (std::vector<int64_t>{32, 16, 3, 3}));
    QCOMPARE(model->tensors()[4].shape, (std::vector<int64_t>{32 * 7 * 7, 128}));
    // Compression's matrices: a kernel tensor has a row per output channel.
    QCOMPARE(model->tensors()[2].rows(), int64_t{32});
    QCOMPARE(model->tensors()[2].columns(), int64_t{16 * 3 * 3});
    QCOMPARE(model->tensors()[3].rows(), int64_t{1});
    const int64_t expected = (16 * 9 + 16) + (32 * 16 * 9 + 32) + (1568 * 128 + 128) +
                             (128 * 128 + 128) + (128 * 10 + 10);
    QCOMPARE(model->parameterCount(), expected);
    QCOMPARE(modelParameterCount(spec), expected);
    const int64_t macs =
        28 * 28 * 16 * 9 + 14 * 14 * 32 * 16 * 9 + 1568 * 128 + 128 * 128 + 128 * 10;
    QCOMPARE(modelKindOf(spec.model).forwardMacs(spec.model, samples), macs);
    // Forward, weight gradients, input gradients but the first convolution's.
    QCOMPARE(model->trainingFlops(10), 2.0 * 10 * (3 * macs - 28 * 28 * 16 * 9));
    // One hand-off per layer with parameters, the last layer first, tiling the buffer.
    QCOMPARE(model->handOffs().size(), std::size_t{5});
    QCOMPARE(model->handOffs().front().end, model->parameterCount());
    QCOMPARE(model->handOffs().back().begin, int64_t{0});
    QCOMPARE(modelKindOf(spec.model).shape(spec.model, samples),
             std::string("CNN 1x28x28 c16-c32 k3 maxpool 128-128-10"));
    // What a replica holds: every layer's output per sample, and the optimizer's own state.
    ExperimentSpec adam = spec;
    adam.optimizer.kind = OptimizerKind::kAdam;
    adam.training.batchSize = 100;
    adam.cluster.localNodes = 3;
    const ReplicaFootprint f = replicaFootprint(adam);
    QCOMPARE(f.parameters, expected);
    QCOMPARE(f.forwardMacsPerSample, macs);
    QCOMPARE(f.activationFloatsPerSample.value_or(0),
             int64_t{16 * 28 * 28 + 16 * 14 * 14 + 32 * 14 * 14 + 32 * 7 * 7 + 128 + 128 + 10});
    QCOMPARE(f.optimizerVectors, int64_t{2});  // Adam's two moments
    QCOMPARE(f.localBatch, int64_t{34});       // 100 over 3 nodes, the largest share
    QCOMPARE(f.stateBytes(), 4 * expected * 4);
    ExperimentSpec mlp = parseExperimentSpec(shapesWith({{"kind", "mlp"}, {"activation", "gelu"}}));
    // Two GELU layers keep their pre-activations too.
    QCOMPARE(replicaFootprint(mlp).activationFloatsPerSample.value_or(0),
             int64_t{2 * 128 + 2 * 128 + 10});
  }

  void configsItsSamplesCannotTakeAreRefused() {
    struct Case {
      json spec;
      std::string path;
      std::string says;
    };
    const json blobs = {{"kind", "gaussian_blobs"}, {"features", 16}, {"classes", 4}};
    const std::vector<Case> cases = {
        {{{"dataset", blobs}, {"model", {{"kind", "cnn"}}}},
         "model.kind",
         "needs images (channels x height x width), and this dataset's samples are vectors of 16"},
        {shapesWith({{"kind", "cnn"}, {"kernel", 4}}), "model.kernel", "must be odd"},
        {shapesWith({{"kind", "cnn"}, {"blocks", 5}}), "model.blocks",
         "5 blocks halve 28 x 28 images to nothing; at most 4"},
        {shapesWith({{"kind", "cnn"}, {"pool", "median"}}), "model.pool", "max"},
        {shapesWith({{"kind", "mlp"}, {"channels", 8}}), "model.channels",
         "only used by cnn, not by mlp"},
    };
    for (const Case& c : cases) {
      const auto e = test::specErrorOf(c.spec);
      QVERIFY2(e.has_value(), c.spec.dump().c_str());
      QCOMPARE(e->path(), c.path);
      QVERIFY2(std::string(e->what()).find(c.says) != std::string::npos, e->what());
    }
    // The settings are written back and read again as the same experiment.
    const ExperimentSpec spec =
        parseExperimentSpec(shapesWith({{"kind", "cnn"}, {"channels", 8}, {"pool", "average"}}));
    const json written = toJson(spec)["model"];
    QCOMPARE(written["channels"], json(8));
    QCOMPARE(written["pool"], json("average"));
    QVERIFY(sameExperiment(parseExperimentSpec(toJson(spec)), spec));
  }

  // The whole model's gradient of a softmax cross-entropy against central differences: the
  // layers chained, the flattening between the last pooling and the dense layers, the hand-offs.
  void gradientsOfTheWholeModel() {
    CpuBackend backend(1);
    ModelConfig config;
    config.kind = "cnn";
    config.hidden = {5};
    config.activation = Activation::kTanh;
    config.parameters.set("channels", int64_t{3});
    config.parameters.set("blocks", int64_t{2});
    // Average pooling: a maximum's kinks are everywhere in a chain (a step that moves a
    // convolution's weight moves every pixel of its channel, and some cross their window's
    // maximum), so no finite difference agrees there; Pool2dLayer's maximum is checked alone in
    // test_layers.cc with steps below the gaps between pixels.
    config.parameters.set("pool", std::string("average"));
    const SampleShape samples{2 * 8 * 8, {2, 8, 8}, 3};
    const std::unique_ptr<Model> model = makeModel(backend, config, samples);
    model->initialize(InitScheme::kXavier, 3);
    const int64_t rows = 4;
    std::vector<float> x(static_cast<std::size_t>(rows * samples.features));
    Rng rng(9);
    for (float& v : x) v = rng.normal();
    const std::vector<float> labels = {0, 2, 1, 2};
    const auto loss = [&](bool backward) {
      const float* out = model->forward(x.data(), rows);
      float* dOut = backward ? model->outputGradBuffer() : nullptr;
      const double sum =
          backend.softmaxCrossEntropy(out, labels.data(), rows, 3, 1.0f, dOut).lossSum;
      if (backward) model->backward(x.data(), dOut, rows);
      return sum;
    };
    loss(true);
    const std::vector<float> analytic = model->gradsToHost();
    std::vector<float> params = model->paramsToHost();
    const float h = 1e-2f;
    std::vector<double> numeric(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const float saved = params[i];
      params[i] = saved + h;
      const double up = params[i];
      model->setParams(params);
      const double plus = loss(false);
      params[i] = saved - h;
      const double down = params[i];
      model->setParams(params);
      const double minus = loss(false);
      params[i] = saved;
      numeric[i] = (plus - minus) / (up - down);
    }
    // Relative to the larger of the entry and the RMS of all, as test_layers.cc judges.
    double squares = 0.0;
    for (double n : numeric) squares += n * n;
    const double rms = std::sqrt(squares / static_cast<double>(numeric.size()));
    double worst = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i)
      worst =
          std::max(worst, std::abs(numeric[i] - analytic[i]) / std::max(std::abs(numeric[i]), rms));
    model->setParams(params);
    QVERIFY2(worst < 1e-3, qPrintable(QString::number(worst)));
  }

  void syncOnFourRanksEqualsOneReplicaOnTheWholeBatch_data() {
    QTest::addColumn<QString>("activation");
    QTest::addColumn<QString>("pool");
    QTest::addColumn<int>("steps");
    // Smooth everywhere: the four slices and the one batch differ only by summation order,
    // and stay within 3e-7 of each other.
    QTest::newRow("tanh, average pooling, 50 steps") << "tanh"
                                                     << "average" << 50;
    // ReLU's and the maximum's kinks: once rounding moves a pre-activation across zero or
    // changes which pixel of a window is largest, the two runs take different gradients and
    // part (measured here: 4e-8 after 10 steps, 7e-4 after 30 with one such flip, 8e-8 after
    // 50 with none), so the default network is held to the bound for 10 steps, as the MLP is.
    QTest::newRow("relu, max pooling, 10 steps") << "relu"
                                                 << "max" << 10;
  }
  void syncOnFourRanksEqualsOneReplicaOnTheWholeBatch() {
    QFETCH(QString, activation);
    QFETCH(QString, pool);
    QFETCH(int, steps);
    ExperimentSpec spec = smallCnnSpec(steps);
    spec.model.activation = activation == "tanh" ? Activation::kTanh : Activation::kReLU;
    spec.model.parameters.set("pool", pool.toStdString());
    const std::vector<float> single = test::runOnRanks(spec, 1)[0].params;
    const std::vector<WorkerResult> four = test::runOnRanks(spec, 4);
    QCOMPARE(four[0].paramChecksum, four[3].paramChecksum);
    QVERIFY2(test::relativeDifference(four[0].params, single) < 1e-4,
             qPrintable(QString::number(test::relativeDifference(four[0].params, single))));
    // The bound discriminates: another global batch gives another trajectory.
    ExperimentSpec other = spec;
    other.training.batchSize = 32;
    const double apart = test::relativeDifference(test::runOnRanks(other, 4)[0].params, single);
    QVERIFY2(apart > 1e-3, qPrintable(QString::number(apart)));
  }

  void everyStrategyTrainsIt() {
    for (const StrategyDescriptor* strategy : strategies()) {
      // Momentum 0.5: at 0.9 the stale updates of the asynchronous phases set some runs back
      // (the hybrid ended 300 steps at 0.43-0.48 where the others passed 0.7).
      ExperimentSpec spec = smallCnnSpec(300);
      spec.optimizer.lr = 0.05f;
      spec.optimizer.momentum = 0.5f;
      spec.cluster.localNodes = 2;
      spec.variants = {defaultVariant(strategy->name)};
      test::RankThreads how;
      how.nodes = test::nodesAt({1.0, 1.0});
      how.parameterServer = strategy->traits.usesParameterServer;
      const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
      for (const WorkerResult& r : results)
        QVERIFY2(r.status == RunStatus::kCompleted, (strategy->name + ": " + r.error).c_str());
      const std::optional<double> accuracy = results[0].finalTestAccuracy
                                                 ? results[0].finalTestAccuracy
                                                 : results[1].finalTestAccuracy;
      QVERIFY2(accuracy.has_value(), strategy->name.c_str());
      // Ten classes: chance is 0.1. The synchronous ones reached 0.79-0.80 here; the
      // asynchronous ones' accuracy depends on how their pushes interleave (0.47-0.90 in runs
      // here), so the bar is three times chance.
      QVERIFY2(*accuracy > 0.3, qPrintable(QString("%1: test accuracy %2")
                                               .arg(QString::fromStdString(strategy->name))
                                               .arg(*accuracy)));
      if (strategy->name == "sync_allreduce")
        QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);
    }
  }

  void itLearnsShapes() {
    // The default cnn (16-32 channels) on shapes, one replica: 95% test accuracy.
    ExperimentSpec spec = parseExperimentSpec(shapesWith({{"kind", "cnn"}}));
    spec.dataset.trainSize = 8192;
    spec.dataset.testSize = 1000;
    spec.optimizer.kind = OptimizerKind::kSgd;
    spec.optimizer.lr = 0.05f;
    spec.optimizer.momentum = 0.9f;
    spec.training.batchSize = 64;
    spec.training.epochs = 0;
    spec.training.maxSteps = 1500;
    spec.training.evalInterval = 100;
    spec.training.targetAccuracy = 0.95;
    const WorkerResult r = test::runOnRanks(spec, 1)[0];
    QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    QVERIFY2(r.finalTestAccuracy.value_or(0.0) >= 0.95,
             qPrintable(QString("test accuracy %1 after %2 steps")
                            .arg(r.finalTestAccuracy.value_or(0.0))
                            .arg(r.steps)));
  }
};

QTEST_GUILESS_MAIN(TestCnn)
#include "test_cnn.moc"
