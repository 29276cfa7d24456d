// Adding a model kind is its own file plus one registry entry: a kind defined in this test
// binary alone (tests/core/dummy_model.h) is parsed, refused where it should be, written back,
// and trained by every registered strategy over real Gloo collectives (and a parameter server
// where the strategy has one), with no other change.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/nn/model_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"
#include "tests/core/dummy_model.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using nlohmann::json;

namespace {

json withModel(json model) {
  return {{"dataset", {{"kind", "gaussian_blobs"}, {"features", 16}, {"classes", 4}}},
          {"model", std::move(model)}};
}

}  // namespace

class TestModelRegistry : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::registerDummyModelKind(); }

  void theRegistryListsItAfterTheBuiltIns() {
    const std::vector<std::string> names = modelKindNames();
    QCOMPARE(names.front(), std::string("mlp"));  // the default
    QCOMPARE(names.back(), std::string(test::kDummyModel));
    QCOMPARE(findModelKind({})->name, std::string("mlp"));
    bool refused = false;
    try {
      registerModelKind(test::dummyModelKind());
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("registered already") != std::string::npos;
    }
    QVERIFY(refused);
    ModelKindDescriptor broken = test::dummyModelKind();
    broken.name = "test_broken";
    broken.parameterCount = nullptr;
    refused = false;
    try {
      registerModelKind(broken);
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("no parameter count") != std::string::npos;
    }
    QVERIFY(refused);
    QVERIFY(findModelKind("test_broken") == nullptr);
  }

  void theParserReadsItsSettingsAndTheWriterWritesThem() {
    const ExperimentSpec spec = parseExperimentSpec(
        withModel({{"kind", test::kDummyModel}, {"hidden", json::array()}, {"init_gain", 0.5}}));
    QCOMPARE(spec.model.kind, std::string(test::kDummyModel));
    QCOMPARE(findModelKind(test::kDummyModel)->view(spec.model).real("init_gain"), 0.5);
    QCOMPARE(modelParameterCount(spec), int64_t{(16 + 1) * 4});
    const json written = toJson(spec)["model"];
    QCOMPARE(written["kind"], json(test::kDummyModel));
    QCOMPARE(written["init_gain"], json(0.5));
    QVERIFY(sameExperiment(parseExperimentSpec(toJson(spec)), spec));

    // A spec without a kind (every spec before model kinds) is an mlp, and says so when written.
    const ExperimentSpec old = parseExperimentSpec(withModel({{"hidden", {8}}}));
    QCOMPARE(old.model.kind, std::string("mlp"));
    QVERIFY(!toJson(old)["model"].contains("init_gain"));
    QCOMPARE(toJson(old)["model"]["kind"], json("mlp"));
    ExperimentSpec built = old;
    built.model.kind.clear();  // as a spec built in code leaves it
    QVERIFY(sameExperiment(built, old));
    QVERIFY(canonicalModel(spec.model) != canonicalModel(old.model));
  }

  void itsSettingsAreRefusedWhereTheyDoNotApply() {
    struct Case {
      json model;
      std::string path;
      std::string says;
    };
    const std::vector<Case> cases = {
        {{{"init_gain", 2.0}}, "model.init_gain", "only used by test_linear, not by mlp"},
        {{{"kind", test::kDummyModel}, {"hidden", json::array()}, {"init_gain", 0}},
         "model.init_gain",
         "(0, 10]"},
        {{{"kind", test::kDummyModel}}, "model.hidden", "no hidden layers"},
        {{{"kind", "test_linaer"}}, "model.kind", "did you mean 'test_linear'"},
        {{{"kind", "cnn2"}}, "model.kind", "mlp"},
    };
    for (const Case& c : cases) {
      const auto e = test::specErrorOf(withModel(c.model));
      QVERIFY2(e.has_value(), c.model.dump().c_str());
      QCOMPARE(e->path(), c.path);
      QVERIFY2(std::string(e->what()).find(c.says) != std::string::npos, e->what());
    }
  }

  // Every registered strategy trains it on two ranks: the workers build it through the
  // registry, the collectives and the parameter server move its buffer, its three hand-offs
  // (bias first, then the weights' rows in two halves) feed the gradient buckets.
  void everyStrategyTrainsIt() {
    for (const StrategyDescriptor* strategy : strategies()) {
      ExperimentSpec spec = test::smallBlobsSpec(80, 1000);
      spec.model.kind = test::kDummyModel;
      spec.model.hidden = {};
      spec.cluster.localNodes = 2;
      spec.variants = {defaultVariant(strategy->name)};
      test::RankThreads how;
      how.nodes = test::nodesAt({1.0, 1.0});
      how.parameterServer = strategy->traits.usesParameterServer;
      const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
      QCOMPARE(results.size(), std::size_t{2});
      for (const WorkerResult& r : results) {
        QVERIFY2(r.status == RunStatus::kCompleted, (strategy->name + ": " + r.error).c_str());
        QVERIFY2(r.steps > 0, strategy->name.c_str());
        QCOMPARE(static_cast<int64_t>(r.params.size()), int64_t{(16 + 1) * 4});
      }
      if (strategy->name == "sync_allreduce")  // synchronous replicas agree bit for bit
        QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);
      const std::optional<double> accuracy = results[0].finalTestAccuracy
                                                 ? results[0].finalTestAccuracy
                                                 : results[1].finalTestAccuracy;
      QVERIFY2(accuracy.has_value(), strategy->name.c_str());
      // Four separable blobs: far above chance (0.25) after 80 steps of a linear model.
      QVERIFY2(*accuracy > 0.7, qPrintable(QString::fromStdString(strategy->name) + " " +
                                           QString::number(*accuracy)));
    }
  }
};

QTEST_GUILESS_MAIN(TestModelRegistry)
#include "test_model_registry.moc"
