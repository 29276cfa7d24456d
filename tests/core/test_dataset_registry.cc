// Adding a dataset kind is its generator plus one registry entry: a kind defined in this test
// binary alone (tests/core/dummy_dataset.h) is parsed, refused where it should be, written
// back, built by makeDataset and trained on by the shared loop over real Gloo collectives,
// with no other change.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "tests/core/dummy_dataset.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using nlohmann::json;

namespace {

std::optional<SpecError> errorOf(const json& dataset) {
  try {
    parseExperimentSpec({{"dataset", dataset}});
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

class TestDatasetRegistry : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::registerDummyDatasetKind(); }

  void theRegistryListsItAfterTheBuiltIns() {
    const std::vector<std::string> names = datasetKindNames();
    QCOMPARE(names.back(), std::string(test::kDummyKind));
    QCOMPARE(names.size(), std::size_t{9});
    QCOMPARE(findDatasetKind({})->name, names.front());  // the default is the first built-in
    bool refused = false;
    try {
      registerDatasetKind(test::dummyDatasetKind());
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("registered already") != std::string::npos;
    }
    QVERIFY(refused);
    // A default outside the kind's own class range is refused at registration.
    DatasetKindDescriptor broken = test::dummyDatasetKind();
    broken.name = "test_broken";
    broken.classes.defaultValue = 9;
    refused = false;
    try {
      registerDatasetKind(broken);
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("out of range") != std::string::npos;
    }
    QVERIFY(refused);
    QVERIFY(findDatasetKind("test_broken") == nullptr);
  }

  void theParserReadsItsParametersAndTheWriterWritesThem() {
    const ExperimentSpec spec = parseExperimentSpec(
        {{"dataset",
          {{"kind", test::kDummyKind}, {"classes", 4}, {"layout", "bands"}, {"tilt", 0.25}}}});
    const DatasetConfig& d = spec.dataset;
    QCOMPARE(d.kind, std::string(test::kDummyKind));
    QCOMPARE(d.classes, int64_t{4});
    QCOMPARE(d.features, int64_t{2});  // fixed by the kind
    const SettingsView v = datasetKindOf(d).view(d);
    QCOMPARE(v.real("gap"), 1.0);  // defaults filled in
    QCOMPARE(v.real("jitter"), 0.05);
    QCOMPARE(v.choice("layout"), std::string("bands"));
    QCOMPARE(v.real("tilt"), 0.25);
    // Written with its own parameters and no other kind's.
    const json written = toJson(spec)["dataset"];
    QCOMPARE(written["gap"], json(1.0));
    QCOMPARE(written["tilt"], json(0.25));
    QCOMPARE(written["layout"], json("bands"));
    QVERIFY(!written.contains("separation"));
    QVERIFY(!written.contains("noise"));
    QVERIFY(sameExperiment(parseExperimentSpec(toJson(spec)), spec));
    // A parameter whose condition does not hold is neither filled in nor written.
    const ExperimentSpec rings = parseExperimentSpec({{"dataset", {{"kind", test::kDummyKind}}}});
    QVERIFY(!rings.dataset.parameters.has("tilt"));
    QVERIFY(!toJson(rings)["dataset"].contains("tilt"));
    QCOMPARE(rings.dataset.classes, int64_t{3});
  }

  void itsParametersAreRefusedWhereTheyDoNotApply() {
    struct Case {
      json dataset;
      std::string path;
      std::string says;
    };
    const std::string kind = test::kDummyKind;
    const Case cases[] = {
        {{{"kind", kind}, {"gap", 0}}, "dataset.gap", "must be in (0, 10]"},
        {{{"kind", kind}, {"layout", "spiral"}}, "dataset.layout", "must be one of rings, bands"},
        {{{"kind", kind}, {"tilt", 0.5}}, "dataset.tilt", "applies only to \"layout\": \"bands\""},
        {{{"kind", kind}, {"features", 3}}, "dataset.features", "is fixed at 2 for test_rings"},
        {{{"kind", kind}, {"classes", 7}}, "dataset.classes", "between 2 and 6 for test_rings"},
        {{{"kind", kind}, {"separation", 2}},
         "dataset.separation",
         "only used by gaussian_blobs, not by test_rings"},
        {{{"kind", kind}, {"jitter", 0.5}}, "dataset.jitter", "a quarter of gap"},
        {{{"kind", "gaussian_blobs"}, {"gap", 2}},
         "dataset.gap",
         "only used by test_rings, not by gaussian_blobs"},
        {{{"kind", "test_ring"}}, "dataset.kind", "did you mean 'test_rings'?"},
    };
    for (const Case& c : cases) {
      const std::optional<SpecError> e = errorOf(c.dataset);
      QVERIFY2(e.has_value(), c.dataset.dump().c_str());
      QCOMPARE(e->path(), c.path);
      QVERIFY2(std::string(e->what()).find(c.says) != std::string::npos, e->what());
    }
    // Another kind's parameter at its default is what writers before the registry put on every
    // dataset: read and dropped.
    const ExperimentSpec old =
        parseExperimentSpec({{"dataset", {{"kind", kind}, {"separation", 4}, {"noise", 1}}}});
    QVERIFY(!old.dataset.parameters.has("separation"));
  }

  // makeDataset builds it from its descriptor; it has no device program, so every backend
  // generates its rows with generate().
  void makeDatasetBuildsIt() {
    DatasetConfig config = defaultDataset(test::kDummyKind);
    config.trainSize = 300;
    config.testSize = 30;
    config.seed = 5;
    const auto data = makeDataset(config);
    QCOMPARE(data->features(), int64_t{2});
    QCOMPARE(data->outputs(), int64_t{3});
    QVERIFY(data->program() == nullptr);
    std::vector<float> x(600), y(300), again(600), yAgain(300);
    data->generate(Split::kTrain, 0, 300, x.data(), y.data());
    makeDataset(config)->generate(Split::kTrain, 0, 300, again.data(), yAgain.data());
    QCOMPARE(x, again);
    for (int i = 0; i < 300; ++i) {
      QCOMPARE(y[static_cast<std::size_t>(i)], static_cast<float>(i % 3));
      const double radius =
          std::hypot(x[2 * static_cast<std::size_t>(i)], x[2 * static_cast<std::size_t>(i) + 1]);
      QVERIFY2(std::abs(radius - (i % 3 + 1)) < 0.4, qPrintable(QString::number(radius)));
    }
  }

  // The shared loop trains on it on two ranks over Gloo, the rows made by generate().
  void theTrainingLoopTrainsOnIt() {
    ExperimentSpec spec = test::smallBlobsSpec(150, 1000);
    spec.dataset = defaultDataset(test::kDummyKind);
    spec.dataset.trainSize = 4096;
    spec.dataset.testSize = 600;
    spec.dataset.seed = 3;
    spec.model.hidden = {32, 32};
    spec.cluster.localNodes = 2;
    test::RankThreads how;
    how.nodes = test::nodesAt({1.0, 1.0});
    const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
    QCOMPARE(results.size(), std::size_t{2});
    for (const WorkerResult& r : results) {
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
      QCOMPARE(r.steps, int64_t{150});
    }
    QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);  // synchronous replicas
    QVERIFY(results[0].finalTestAccuracy.has_value());
    // Three rings 1 apart with jitter 0.05: far above chance (1/3) after 150 steps.
    QVERIFY2(*results[0].finalTestAccuracy > 0.8,
             qPrintable(QString::number(*results[0].finalTestAccuracy)));
  }
};

QTEST_GUILESS_MAIN(TestDatasetRegistry)
#include "test_dataset_registry.moc"
