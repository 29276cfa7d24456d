// The spec's strategy variants: every kind of DESIGN.md's strategy table, the fields each
// reads, and the refusal of a field that the variant's strategy would ignore.
#include <QtTest/QtTest>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"

using dtlab::core::ExperimentSpec;
using dtlab::core::HybridPolicy;
using dtlab::core::SpecError;
using dtlab::core::StrategyKind;
using dtlab::core::VariantConfig;
using nlohmann::json;

namespace {

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
    QCOMPARE(v[1].strategy, StrategyKind::kAsyncPs);
    QCOMPARE(v[1].psShards, int64_t{2});
    QVERIFY(v[1].usesParameterServer());
    QVERIFY(!v[0].usesParameterServer());
    QCOMPARE(v[2].strategy, StrategyKind::kSsp);
    QCOMPARE(v[2].staleness, int64_t{5});
    QCOMPARE(v[3].strategy, StrategyKind::kLocalSgd);
    QCOMPARE(v[3].period, int64_t{4});
    QCOMPARE(v[4].name, std::string("hybrid"));
    QCOMPARE(v[4].policy, HybridPolicy::kSyncThenAsync);
    QCOMPARE(v[4].switchAt, 0.25);
    QCOMPARE(v[5].policy, HybridPolicy::kAdaptive);
    QCOMPARE(v[5].stragglerRatio, 2.0);
    QCOMPARE(v[5].window, int64_t{10});
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
    QCOMPARE(spec.variants[0].staleness, int64_t{3});
    QCOMPARE(spec.variants[0].psShards, int64_t{0});  // every node of the run
    QCOMPARE(spec.variants[1].period, int64_t{8});
    QCOMPARE(spec.variants[2].stragglerRatio, 1.5);
    QCOMPARE(spec.variants[2].window, int64_t{20});
    QCOMPARE(
        dtlab::core::strategyNames(),
        (std::vector<std::string>{"sync_allreduce", "async_ps", "ssp", "local_sgd", "hybrid"}));
    QCOMPARE(dtlab::core::hybridPolicyNames(),
             (std::vector<std::string>{"sync_then_async", "adaptive"}));
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
};

QTEST_GUILESS_MAIN(TestSpecStrategies)
#include "test_spec_strategies.moc"
