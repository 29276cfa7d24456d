// Adding a strategy is its class plus one registry entry: a strategy defined in this test
// binary alone (tests/core/dummy_strategy.h) is parsed, refused where it should be, written
// back, and trained by the shared loop over real Gloo collectives, with no other change.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"
#include "tests/core/dummy_strategy.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using nlohmann::json;

namespace {

json twoNodes(json variants) {
  return {{"cluster", {{"local_nodes", 2}}}, {"variants", std::move(variants)}};
}

std::optional<SpecError> errorOf(const json& variants) {
  try {
    parseExperimentSpec(twoNodes(variants));
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

class TestStrategyRegistry : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::registerDummyStrategy(); }

  void theRegistryListsItAfterTheBuiltIns() {
    const std::vector<std::string> names = strategyNames();
    QCOMPARE(names.back(), std::string(test::kDummyStrategy));
    QCOMPARE(names.size(), std::size_t{6});
    // A name is registered once.
    bool refused = false;
    try {
      registerStrategy(test::mixingDescriptor());
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("registered already") != std::string::npos;
    }
    QVERIFY(refused);
    // A setting that depends on one the strategy lacks is refused at registration.
    StrategyDescriptor broken = test::mixingDescriptor();
    broken.name = "test_broken";
    broken.settings.erase(broken.settings.begin() + 1);  // "mode", which "root" depends on
    refused = false;
    try {
      registerStrategy(broken);
    } catch (const dtlab::Error& e) {
      refused = std::string(e.what()).find("depends on 'mode'") != std::string::npos;
    }
    QVERIFY(refused);
    QVERIFY(findStrategy("test_broken") == nullptr);
  }

  void theParserReadsItsSettingsAndTheWriterWritesThem() {
    const ExperimentSpec spec = parseExperimentSpec(twoNodes(json::array({
        {{"strategy", test::kDummyStrategy}},
        {{"name", "b"},
         {"strategy", test::kDummyStrategy},
         {"mode", "broadcast"},
         {"root", 1},
         {"every", 3}},
    })));
    const VariantConfig& a = spec.variants[0];
    QCOMPARE(a.name, std::string(test::kDummyStrategy));
    QCOMPARE(a.strategy, std::string(test::kDummyStrategy));
    // Defaults filled in; "root" belongs to the broadcast mode only.
    QCOMPARE(*a.settings.find("every"), SettingValue(int64_t{4}));
    QCOMPARE(*a.settings.find("mode"), SettingValue(std::string("average")));
    QVERIFY(!a.settings.has("root"));
    const VariantConfig& b = spec.variants[1];
    QCOMPARE(*b.settings.find("every"), SettingValue(int64_t{3}));
    QCOMPARE(*b.settings.find("root"), SettingValue(int64_t{1}));

    const json written = toJson(spec)["variants"];
    QCOMPARE(written[1], json({{"name", "b"},
                               {"strategy", test::kDummyStrategy},
                               {"every", 3},
                               {"mode", "broadcast"},
                               {"root", 1}}));
    QVERIFY(!written[0].contains("root"));
    QCOMPARE(parseExperimentSpec(toJson(spec)), spec);
  }

  void itsSettingsAreRefusedWhereTheyDoNotApply() {
    struct Case {
      json variant;
      std::string path;
      std::string says;
    };
    const std::vector<Case> cases = {
        // Its own setting, out of range, and its condition unmet.
        {{{"strategy", test::kDummyStrategy}, {"every", 0}},
         "variants[0].every",
         "positive integer"},
        {{{"strategy", test::kDummyStrategy}, {"root", 1}},
         "variants[0].root",
         "applies only to \"mode\": \"broadcast\""},
        {{{"strategy", test::kDummyStrategy}, {"mode", "broadcst"}},
         "variants[0].mode",
         "did you mean 'broadcast'"},
        // Its own check: the root must be one of the variant's nodes.
        {{{"strategy", test::kDummyStrategy}, {"mode", "broadcast"}, {"root", 2}},
         "variants[0].root",
         "rank of the variant's 2 nodes"},
        // Its setting on another strategy, and another strategy's setting on it.
        {{{"strategy", "sync_allreduce"}, {"every", 2}},
         "variants[0].every",
         "applies only to test_mixing, not to \"strategy\": \"sync_allreduce\""},
        {{{"strategy", test::kDummyStrategy}, {"staleness", 2}},
         "variants[0].staleness",
         "applies only to ssp, not to \"strategy\": \"test_mixing\""},
        // A misspelt strategy name suggests it.
        {{{"strategy", "test_mxing"}}, "variants[0].strategy", "did you mean 'test_mixing'"},
    };
    for (const Case& c : cases) {
      const auto e = errorOf(json::array({c.variant}));
      QVERIFY2(e.has_value(), c.variant.dump().c_str());
      QCOMPARE(e->path(), c.path);
      QVERIFY2(std::string(e->what()).find(c.says) != std::string::npos, e->what());
    }
  }

  // The shared loop runs it on two ranks over Gloo: every step trains, every third mixes. A
  // run of 6 steps ends on a mix, so the replicas end identical; 7 steps leaves one step of
  // local training after the last mix, so they differ.
  void theTrainingLoopTrainsIt() {
    for (const auto& [steps, identical] : {std::pair{6, true}, std::pair{7, false}}) {
      ExperimentSpec spec = test::smallBlobsSpec(steps, 1000);
      spec.cluster.localNodes = 2;
      spec.variants = parseExperimentSpec(twoNodes(json::array({{{"strategy", test::kDummyStrategy},
                                                                 {"mode", "broadcast"},
                                                                 {"root", 1},
                                                                 {"every", 3}}})))
                          .variants;
      test::RankThreads how;
      how.nodes = test::nodesAt({1.0, 1.0});
      const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
      QCOMPARE(results.size(), std::size_t{2});
      for (const WorkerResult& r : results) {
        QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
        QCOMPARE(r.steps, int64_t{steps});
        QCOMPARE(r.samples, int64_t{steps} * 32);  // half of each global batch of 64
      }
      QCOMPARE(results[0].paramChecksum == results[1].paramChecksum, identical);
      QVERIFY(results[0].finalTestAccuracy.has_value());
    }
  }
};

QTEST_GUILESS_MAIN(TestStrategyRegistry)
#include "test_strategy_registry.moc"
