// The spec's strategy variants: every registered strategy (core/train/strategy_registry.cc), the
// fields each reads, and the refusal of a field that the variant's strategy would ignore.
#include <QtTest/QtTest>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"

using dtlab::core::ExperimentSpec;
using dtlab::core::SettingValue;
using dtlab::core::SpecError;
using dtlab::core::VariantConfig;
using nlohmann::json;

namespace {

// The value a parsed variant holds for `key`; a parsed variant holds every setting that applies.
SettingValue at(const VariantConfig& v, const std::string& key) {
  const SettingValue* value = v.settings.find(key);
  return value != nullptr ? *value : SettingValue(std::string("(none)"));
}
SettingValue integer(int64_t value) {
  return value;
}
SettingValue text(const char* value) {
  return std::string(value);
}

json fourNodes(json variants) {
  return {{"cluster", {{"local_nodes", 4}}}, {"variants", std::move(variants)}};
}

std::optional<SpecError> errorOf(const json& variants) {
  try {
    dtlab::core::parseExperimentSpec(fourNodes(variants));
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

class TestSpecStrategies : public QObject {
  Q_OBJECT
 private slots:
  void everyStrategyOfTheDesignTableParses() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(fourNodes(json::array({
        {{"strategy", "sync_allreduce"}},
        {{"strategy", "async_ps"}, {"ps_shards", 2}},
        {{"strategy", "ssp"}, {"staleness", 5}},
        {{"strategy", "local_sgd"}, {"period", 4}},
        {{"strategy", "hybrid"}, {"switch_at", 0.25}},
        {{"name", "adaptive"},
         {"strategy", "hybrid"},
         {"policy", "adaptive"},
         {"straggler_ratio", 2.0},
         {"window", 10}},
    })));
    QCOMPARE(spec.variants.size(), size_t{6});
    const auto& v = spec.variants;
    QCOMPARE(v[1].strategy, std::string("async_ps"));
    QCOMPARE(at(v[1], "ps_shards"), integer(2));
    QVERIFY(dtlab::core::strategyOf(v[1]).traits.usesParameterServer);
    QVERIFY(!dtlab::core::strategyOf(v[0]).traits.usesParameterServer);
    QCOMPARE(v[2].strategy, std::string("ssp"));
    QCOMPARE(at(v[2], "staleness"), integer(5));
    QCOMPARE(v[3].strategy, std::string("local_sgd"));
    QCOMPARE(at(v[3], "period"), integer(4));
    QCOMPARE(v[4].name, std::string("hybrid"));
    QCOMPARE(at(v[4], "policy"), text("sync_then_async"));
    QCOMPARE(at(v[4], "switch_at"), SettingValue(0.25));
    QVERIFY(!v[4].settings.has("window"));  // the adaptive policy's only
    QCOMPARE(at(v[5], "policy"), text("adaptive"));
    QCOMPARE(at(v[5], "straggler_ratio"), SettingValue(2.0));
    QCOMPARE(at(v[5], "window"), integer(10));
    // The written spec reads back as the same spec, defaults included.
    QCOMPARE(dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec);
    const json written = dtlab::core::toJson(spec)["variants"];
    QCOMPARE(written[2]["staleness"].get<int64_t>(), int64_t{5});
    QVERIFY(!written[0].contains("staleness"));
    QVERIFY(!written[3].contains("ps_shards"));
  }

  void defaultsAreTheDocumentedOnes() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(fourNodes(json::array({
        {{"strategy", "ssp"}},
        {{"strategy", "local_sgd"}},
        {{"strategy", "hybrid"}, {"policy", "adaptive"}},
    })));
    QCOMPARE(at(spec.variants[0], "staleness"), integer(3));
    QCOMPARE(at(spec.variants[0], "ps_shards"), integer(0));  // every node of the run
    QCOMPARE(at(spec.variants[1], "period"), integer(8));
    QCOMPARE(at(spec.variants[2], "straggler_ratio"), SettingValue(1.5));
    QCOMPARE(at(spec.variants[2], "window"), integer(20));
    QCOMPARE(
        dtlab::core::strategyNames(),
        (std::vector<std::string>{"sync_allreduce", "async_ps", "ssp", "local_sgd", "hybrid"}));
    QCOMPARE(
        dtlab::core::findSetting(dtlab::core::findStrategy("hybrid")->settings, "policy")->choices,
        (std::vector<std::string>{"sync_then_async", "adaptive"}));
  }

  // Specs written before each strategy had its own settings carry "partition": "equal" and a
  // bucket_kb on every variant: they still read, and the settings go where nobody reads them.
  void settingsEveryOldVariantCarriedStillRead() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(fourNodes(json::array({
        {{"strategy", "async_ps"}, {"partition", "equal"}, {"bucket_kb", 256}},
        {{"strategy", "local_sgd"}, {"partition", "equal"}, {"bucket_kb", 1024}},
        {{"strategy", "hybrid"}, {"partition", "equal"}, {"bucket_kb", 64}},
    })));
    QVERIFY(!spec.variants[0].settings.has("partition"));
    QVERIFY(!spec.variants[0].settings.has("bucket_kb"));
    QVERIFY(!spec.variants[1].settings.has("bucket_kb"));
    QCOMPARE(at(spec.variants[2], "bucket_kb"), integer(64));  // hybrid's sync phases read it
    QVERIFY(!spec.variants[2].settings.has("partition"));
    QCOMPARE(dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec);
    // Checked as its owners check it, though dropped.
    const auto e = errorOf(json::array({{{"strategy", "async_ps"}, {"bucket_kb", 0}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].bucket_kb"));
  }

  void aFieldTheStrategyWouldIgnoreIsRefusedByPath() {
    struct Case {
      json variant;
      std::string path;
      std::string says;
    };
    const std::vector<Case> cases = {
        {{{"strategy", "async_ps"}, {"staleness", 2}},
         "variants[0].staleness",
         "applies only to ssp"},
        {{{"strategy", "sync_allreduce"}, {"ps_shards", 2}},
         "variants[0].ps_shards",
         "async_ps, ssp and hybrid"},
        {{{"strategy", "ssp"}, {"period", 2}}, "variants[0].period", "local_sgd"},
        {{{"strategy", "local_sgd"}, {"policy", "adaptive"}}, "variants[0].policy", "hybrid"},
        {{{"strategy", "hybrid"}, {"policy", "adaptive"}, {"switch_at", 0.5}},
         "variants[0].switch_at",
         "sync_then_async"},
        {{{"strategy", "hybrid"}, {"window", 5}}, "variants[0].window", "adaptive"},
        {{{"strategy", "async_ps"}, {"partition", "speed_proportional"}},
         "variants[0].partition",
         "sync_allreduce"},
    };
    for (const Case& c : cases) {
      const auto e = errorOf(json::array({c.variant}));
      QVERIFY2(e.has_value(), c.variant.dump().c_str());
      QCOMPARE(e->path(), c.path);
      QVERIFY2(e->reason().find(c.says) != std::string::npos, e->what());
    }
  }

  void outOfRangeValuesNameTheFieldAndTheRange() {
    auto e = errorOf(json::array({{{"strategy", "async_ps"}, {"ps_shards", 5}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].ps_shards"));
    QVERIFY2(e->reason().find("at most the variant's 4 nodes") != std::string::npos, e->what());
    // A baseline on two nodes has at most two shards.
    e = errorOf(json::array({{{"strategy", "ssp"}, {"nodes", 2}, {"ps_shards", 3}}}));
    QVERIFY(e);
    QVERIFY2(e->reason().find("2 nodes") != std::string::npos, e->what());
    e = errorOf(json::array({{{"strategy", "hybrid"}, {"switch_at", 1.0}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].switch_at"));
    e = errorOf(
        json::array({{{"strategy", "hybrid"}, {"policy", "adaptive"}, {"straggler_ratio", 1.0}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].straggler_ratio"));
    e = errorOf(json::array({{{"strategy", "local_sgd"}, {"period", 0}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].period"));
    e = errorOf(json::array({{{"strategy", "hybrid"}, {"policy", "adaptiv"}}}));
    QVERIFY(e);
    QVERIFY2(std::string(e->what()).find("did you mean 'adaptive'") != std::string::npos,
             e->what());
  }

  // on_node_loss: each strategy offers what it can do ("continue" for the parameter-server
  // ones and local_sgd, "restart" for the synchronous one, which needs checkpoints to restart
  // from), "fail" being the default everywhere.
  void onNodeLossOffersWhatTheStrategyCanDo() {
    namespace core = dtlab::core;
    const auto parsed = dtlab::core::parseExperimentSpec(fourNodes(
        json::array({{{"strategy", "async_ps"}, {"ps_shards", 1}, {"on_node_loss", "continue"}},
                     {{"strategy", "ssp"}},
                     {{"strategy", "local_sgd"}, {"on_node_loss", "continue"}},
                     {{"strategy", "hybrid"}, {"ps_shards", 1}, {"on_node_loss", "continue"}}})));
    QCOMPARE(core::nodeLossPolicy(parsed.variants[0]), core::NodeLossPolicy::kContinue);
    QCOMPARE(core::nodeLossPolicy(parsed.variants[1]), core::NodeLossPolicy::kFail);
    QCOMPARE(core::nodeLossPolicy(parsed.variants[2]), core::NodeLossPolicy::kContinue);
    QCOMPARE(core::nodeLossPolicy(parsed.variants[3]), core::NodeLossPolicy::kContinue);

    auto e = errorOf(json::array({{{"strategy", "sync_allreduce"}, {"on_node_loss", "continue"}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].on_node_loss"));
    QVERIFY2(e->reason().find("restart") != std::string::npos, e->what());
    // local_sgd's replicas differ between averages: no checkpoint restarts them all.
    e = errorOf(json::array({{{"strategy", "local_sgd"}, {"on_node_loss", "restart"}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].on_node_loss"));
    QVERIFY2(e->reason().find("continue") != std::string::npos, e->what());
    // A restart continues from a checkpoint: a spec that keeps none is refused, saying so.
    e = errorOf(json::array({{{"strategy", "sync_allreduce"}, {"on_node_loss", "restart"}}}));
    QVERIFY(e);
    QCOMPARE(e->path(), std::string("variants[0].on_node_loss"));
    QVERIFY2(e->reason().find("training.checkpoint_every") != std::string::npos, e->what());
    json spec =
        fourNodes(json::array({{{"strategy", "sync_allreduce"}, {"on_node_loss", "restart"}}}));
    spec["training"] = {{"checkpoint_seconds", 30}};
    QCOMPARE(core::nodeLossPolicy(core::parseExperimentSpec(spec).variants[0]),
             core::NodeLossPolicy::kRestart);
  }
};

QTEST_GUILESS_MAIN(TestSpecStrategies)
#include "test_spec_strategies.moc"
