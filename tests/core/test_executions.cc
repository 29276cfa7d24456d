// Executions and repeats (core/spec/execution_plan.h, core/analysis/comparison_statistics.h): the
// plan of one execution and its paired seeds, the spec's "repeats", executions in a real
// project file, the comparison of an execution (its runs, the latest execution by default, a
// chosen one), and the statistics over repetitions against figures worked out by hand.
#include <QtTest/QtTest>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/analysis/comparison_statistics.h"
#include "core/analysis/seed_table.h"
#include "core/common/check.h"
#include "core/spec/execution_plan.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"

using namespace dtlab::core;

namespace {

ExperimentSpec twoVariants(int64_t repeats) {
  return parseExperimentSpec(nlohmann::json::parse(R"({
    "name": "modes", "seed": 7, "repeats": )" + std::to_string(repeats) +
                                                   R"(,
    "variants": [{"name": "sync", "strategy": "sync_allreduce"},
                 {"name": "async", "strategy": "async_ps"}]})"));
}

// A completed run's summary with the figures the statistics read.
nlohmann::json summary(const std::string& variant, double samplesPerS, double toTarget,
                       const std::string& status = "completed") {
  return {{"name", variant},
          {"strategy", variant == "sync" ? "sync_allreduce" : "async_ps"},
          {"status", status},
          {"stop_reason", status == "completed" ? "target_accuracy" : "error"},
          {"samples_per_s", samplesPerS},
          {"time_to_target_s", toTarget},
          {"wall_s", toTarget + 1.0}};
}

// An execution of two variants x five repetitions: async's samples/s about twice sync's in
// every repetition, and one failed async run (repetition 3).
Comparison fiveRepetitions() {
  const double sync[] = {100, 110, 90, 105, 95};
  const double async[] = {210, 215, 185, 200, 190};
  Comparison c;
  c.experiment = "modes";
  c.executionId = 1;
  c.repeats = 5;
  for (const char* variant : {"sync", "async"}) {
    for (int r = 0; r < 5; ++r) {
      const bool isSync = std::string(variant) == "sync";
      const double rate = isSync ? sync[r] : async[r];
      ComparisonRow row = comparisonRow(summary(variant, rate, 1000.0 / rate));
      row.repetition = r;
      c.rows.push_back(row);
    }
  }
  c.rows[0].maxStaleness = 3.0;
  c.rows[1].maxStaleness = 5.0;
  // async's repetition 3 fails: it counts among the runs, not among the figures.
  ComparisonRow& failed = c.rows[5 + 3];
  failed = comparisonRow(summary("async", 1.0, 1.0, "failed"));
  failed.repetition = 3;
  return c;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class TestExecutions : public QObject {
  Q_OBJECT

 private slots:
  // Repetition by repetition, every variant of one repetition with the same seed, the first
  // repetition with the spec's own, the dataset's seed untouched.
  void planPairsTheVariantsOfARepetition() {
    const ExperimentSpec spec = twoVariants(3);
    const std::vector<PlannedRun> plan = executionPlan(spec);
    QCOMPARE(plan.size(), std::size_t{6});
    std::set<uint64_t> seeds;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      QCOMPARE(plan[i].repetition, static_cast<int>(i / 2));
      QCOMPARE(plan[i].variant, static_cast<int>(i % 2));
      QCOMPARE(plan[i].spec.dataset.seed, uint64_t{7});
      QCOMPARE(plan[i].spec.seed, plan[i - i % 2].spec.seed);
      seeds.insert(plan[i].spec.seed);
    }
    QCOMPARE(plan[0].spec.seed, uint64_t{7});
    QCOMPARE(seeds.size(), std::size_t{3});
    QCOMPARE(plan[3].name, std::string("modes/async"));
    QCOMPARE(repetitionSeed(7, 2), plan[4].spec.seed);

    // One repetition runs the spec as written.
    const std::vector<PlannedRun> once = executionPlan(twoVariants(1));
    QCOMPARE(once.size(), std::size_t{2});
    QVERIFY(sameExperiment(once[0].spec, twoVariants(1)) &&
            sameExperiment(once[1].spec, twoVariants(1)));
  }

  void specRepeatsAreReadCheckedAndWritten() {
    QCOMPARE(parseExperimentSpec(nlohmann::json::object()).repeats, int64_t{1});
    const ExperimentSpec five = twoVariants(5);
    QCOMPARE(five.repeats, int64_t{5});
    QCOMPARE(toJson(five)["repeats"].get<int64_t>(), int64_t{5});
    QVERIFY(sameExperiment(parseExperimentSpec(toJson(five)), five));
    for (const char* bad : {"0", "1001", "2.5", "\"3\""}) {
      try {
        parseExperimentSpecText(std::string(R"({"repeats": )") + bad + "}");
        QFAIL(bad);
      } catch (const SpecError& e) {
        QCOMPARE(e.path(), std::string("repeats"));
      }
    }
  }

  // Executions in a project file: the runs of each, the latest compared by default, another
  // on request, the runs recorded outside executions left out, unknown executions refused.
  void comparesAnExecutionOfAProject() {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    const ExperimentSpec spec = twoVariants(2);
    // A run from before executions: the experiment's latest run of "sync".
    const int64_t legacy =
        store->beginRun({store->putEntity(EntityKind::kExperiment, "modes", toJson(spec)),
                         "modes/sync", "sync_allreduce", 7, nullptr, std::nullopt, 0});
    store->setRunStatus(legacy, RunStatus::kCompleted);

    std::vector<int64_t> executions;
    for (int e = 0; e < 2; ++e) {
      executions.push_back(beginExecution(*store, spec));
      for (const PlannedRun& run : executionPlan(spec)) {
        RunStart start;
        start.experimentId = store->execution(executions.back())->experimentId;
        start.name = run.name;
        start.strategy = run.variant == 0 ? "sync_allreduce" : "async_ps";
        start.seed = run.spec.seed;
        start.executionId = executions.back();
        start.repetition = run.repetition;
        const int64_t id = store->beginRun(start);
        RunSummary s;
        s.name = spec.variants[static_cast<std::size_t>(run.variant)].name;
        s.strategy = start.strategy;
        s.status = RunStatus::kCompleted;
        s.samplesPerS = 100.0 * (e + 1) + run.repetition;
        store->finishRun(id, s);
      }
    }
    QCOMPARE(store->executions().size(), std::size_t{2});
    QCOMPARE(store->execution(executions[1])->repeats, int64_t{2});
    QCOMPARE(store->execution(executions[1])->seed, uint64_t{7});
    const RunRecord last = store->runs().back();
    QCOMPARE(last.executionId, std::optional<int64_t>(executions[1]));
    QCOMPARE(last.repetition, int64_t{1});
    QCOMPARE(last.seed, repetitionSeed(7, 1));

    const Comparison latest = compareExperiment(*store, std::nullopt);
    QCOMPARE(latest.executionId, std::optional<int64_t>(executions[1]));
    QCOMPARE(latest.repeats, int64_t{2});
    QVERIFY(latest.mostRecent);
    QVERIFY(hasRepetitions(latest));
    QCOMPARE(latest.rows.size(), std::size_t{4});
    // sync's two repetitions, then async's.
    QCOMPARE(latest.rows[0].variant, std::string("sync"));
    QCOMPARE(latest.rows[1].variant, std::string("sync"));
    QCOMPARE(latest.rows[1].repetition, int64_t{1});
    QCOMPARE(latest.rows[2].variant, std::string("async"));
    QCOMPARE(latest.rows[3].samplesPerS, std::optional<double>(201.0));

    const Comparison first = compareExperiment(*store, "modes", executions[0]);
    QCOMPARE(first.rows.size(), std::size_t{4});
    QCOMPARE(first.rows[0].samplesPerS, std::optional<double>(100.0));
    QVERIFY(!first.mostRecent);
    QVERIFY(contains(comparisonTable(first), "execution " + std::to_string(executions[0])));

    try {
      compareExperiment(*store, "modes", 99);
      QFAIL("an unknown execution compared");
    } catch (const dtlab::Error& e) {
      QVERIFY2(contains(e.what(), "has no execution 99 (its executions: 1, 2)"), e.what());
    }
    // Deleting an execution's runs leaves it out of the list.
    for (const RunRecord& r : store->runs())
      if (r.executionId == executions[0]) store->deleteRun(r.id);
    QCOMPARE(store->executions().size(), std::size_t{1});
  }

  // Medians and intervals against the samples: five distinct values give the interval
  // [min, max] exactly (core_test_statistics shows why); a failed run gives no figure.
  void statisticsPerVariant() {
    const Comparison c = fiveRepetitions();
    const ComparisonStatistics s = comparisonStatistics(c);
    QCOMPARE(s.variants.size(), std::size_t{2});
    const VariantStatistics& sync = s.variants[0];
    QCOMPARE(sync.runs, int64_t{5});
    QCOMPARE(sync.completed, int64_t{5});
    const FigureStatistics* rate = sync.figure("samples_per_s");
    QVERIFY(rate != nullptr);
    QCOMPARE(rate->interval.estimate, 100.0);
    QCOMPARE(rate->interval.low, 90.0);
    QCOMPARE(rate->interval.high, 110.0);
    QCOMPARE(rate->interval.n, 5);
    QVERIFY(sync.figure("mean_staleness") == nullptr);  // no run measured it
    QCOMPARE(sync.figure("max_staleness")->interval.estimate, 4.0);
    QCOMPARE(sync.figure("max_staleness")->interval.n, 2);

    const VariantStatistics& async = s.variants[1];
    QCOMPARE(async.runs, int64_t{5});
    QCOMPARE(async.completed, int64_t{4});
    // 210, 215, 185, 190 (repetition 3 failed): the median of four is the mean of the middle
    // two.
    QCOMPARE(async.figure("samples_per_s")->interval.estimate, 200.0);
    QCOMPARE(async.figure("samples_per_s")->interval.n, 4);
    QCOMPARE(async.outcomes.size(), std::size_t{2});
    QCOMPARE(async.outcomes[0], (std::pair<std::string, int64_t>("target reached", 4)));
  }

  // The ratio of medians, paired by repetition: the failed repetition drops out of both
  // sides; async is faster in each of the four pairs left.
  void ratiosAgainstTheFirstVariant() {
    const ComparisonStatistics s = comparisonStatistics(fiveRepetitions());
    const RatioStatistics* rate = nullptr;
    const RatioStatistics* toTarget = nullptr;
    for (const RatioStatistics& r : s.ratios) {
      QCOMPARE(r.variant, std::string("async"));
      QCOMPARE(r.baseline, std::string("sync"));
      if (std::string(r.column->key) == "samples_per_s") rate = &r;
      if (std::string(r.column->key) == "time_to_target_s") toTarget = &r;
    }
    QVERIFY(rate != nullptr && toTarget != nullptr);
    // Repetition 3 (async failed) leaves the pairs (210,100), (215,110), (185,90), (190,95):
    // medians 200 and 97.5.
    QCOMPARE(rate->ratio.n, 4);
    QCOMPARE(rate->ratio.estimate, 200.0 / 97.5);
    QVERIFY(rate->ratio.low > 1.0 && rate->ratio.high >= rate->ratio.estimate);
    QCOMPARE(rate->test.greater, 4);
    QCOMPARE(rate->test.less, 0);
    QVERIFY(rate->holds && rate->test.pValue < 0.001);
    // Each repetition's own ratio, in repetition order (0, 1, 2, 4).
    QCOMPARE(rate->repetitionRatios,
             (std::vector<double>{210.0 / 100, 215.0 / 110, 185.0 / 90, 190.0 / 95}));
    // Time to target is 1000 / rate: the reciprocal ratio, lower in every pair.
    QCOMPARE(toTarget->test.less, 4);
    QVERIFY(toTarget->holds);

    // Another pair on request; a pair naming an unknown variant is refused.
    Comparison c = fiveRepetitions();
    c.pairs = {parseVariantPair(c, "sync:async")};
    const ComparisonStatistics swapped = comparisonStatistics(c);
    QCOMPARE(swapped.ratios.front().variant, std::string("sync"));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, parseVariantPair(c, "sync:local"));
  }

  // The table of an execution: a row per variant with medians and intervals, then the ratios;
  // JSON carries the same statistics beside every run.
  void tableAndJsonOfRepetitions() {
    const Comparison c = fiveRepetitions();
    const std::string table = comparisonTable(c);
    const std::vector<std::string> all = lines(table);
    QVERIFY2(contains(all[0], "2 variants x 5 repetitions"), table.c_str());
    QVERIFY2(contains(table, "100 [90, 110]"), table.c_str());
    // async's four completed runs {185, 190, 210, 215}: a resample's median is 185 when at
    // least three of its four draws are 185, P = 4 (1/4)^3 (3/4) + (1/4)^4 = 0.051 > 0.025, so
    // the interval's low end is 185 (and its high end 215, by symmetry).
    QVERIFY2(contains(table, "200 [185, 215]"), table.c_str());
    // Only two of sync's five runs measured staleness: its cell says how many.
    QVERIFY2(contains(table, "n=2"), table.c_str());
    QVERIFY2(contains(table, "4/5"), table.c_str());
    QVERIFY2(contains(table, "2.051 ["), table.c_str());
    QVERIFY2(contains(table, "higher in 4, lower in 0 of 4"), table.c_str());
    QVERIFY2(contains(table, "holds"), table.c_str());
    QVERIFY2(contains(table, "1 failed"), table.c_str());

    const nlohmann::json json = comparisonJson(c);
    QCOMPARE(json["rows"].size(), std::size_t{10});
    QCOMPARE(json["rows"][7]["repetition"].get<int64_t>(), int64_t{2});
    const nlohmann::json& stats = json["statistics"];
    QCOMPARE(stats["level"].get<double>(), 0.95);
    QCOMPARE(stats["variants"][0]["figures"]["samples_per_s"]["median"].get<double>(), 100.0);
    QCOMPARE(stats["variants"][1]["completed"].get<int64_t>(), int64_t{4});
    QCOMPARE(stats["ratios"][0]["baseline"].get<std::string>(), std::string("sync"));
    QVERIFY(stats["ratios"][0]["holds"].is_boolean());

    // The same table in markdown (bench strategies, the README): a header, an alignment row
    // (figures right-aligned), a row per variant, a '|' inside a cell escaped.
    StatisticsTable variants = variantStatisticsTable(comparisonStatistics(c));
    variants.rows[0][0] = "a|b";
    const std::vector<std::string> md = lines(markdownStatisticsTable(variants));
    QCOMPARE(md.size(), std::size_t{4});
    QVERIFY2(md[0].starts_with("| variant | strategy | partition | completed |"), md[0].c_str());
    QVERIFY2(md[1].starts_with("|---|---|---|---:|"), md[1].c_str());
    QVERIFY2(md[2].starts_with("| a\\|b | "), md[2].c_str());
    QVERIFY2(contains(md[2], " 100 [90, 110] |"), md[2].c_str());
  }

  // The seed table of the five repetitions: a column per variant, a row per aspect, every cell
  // a figure or why there is none.
  void seedTableFillsEveryCell() {
    Comparison c = fiveRepetitions();
    c.rows[5].recoveries = 1;  // async, repetition 0: a node lost and survived
    c.rows[5].recoveryS = 2.5;
    c.rows[5].stepsLost = 4;
    const StatisticsTable t = seedTable(c, comparisonStatistics(c));
    QCOMPARE(t.header, (std::vector<std::string>{"aspect", "measure", "sync (sync_allreduce)",
                                                 "async (async_ps)"}));
    QCOMPARE(t.rows.size(), std::size_t{9});
    std::set<std::string> aspects;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      aspects.insert(t.rows[r][0]);
      QCOMPARE(t.rows[r].size(), std::size_t{4});
      for (std::size_t v = 2; v < 4; ++v) {
        QVERIFY2(!t.rows[r][v].empty(), t.rows[r][1].c_str());
        QVERIFY2(!t.tooltips[r][v].empty(), t.rows[r][1].c_str());
      }
    }
    QCOMPARE(aspects, (std::set<std::string>{"consistency", "efficiency", "memory", "communication",
                                             "debuggability", "fault tolerance"}));
    const auto cell = [&](const std::string& measure, std::size_t variant) {
      for (const auto& row : t.rows)
        if (row[1] == measure) return row[2 + variant];
      return std::string("(no row ") + measure + ")";
    };
    QCOMPARE(cell("samples/s", 0), std::string("100 [90, 110]"));
    QCOMPARE(cell("samples/s", 1), std::string("200 [185, 215]"));
    QCOMPARE(cell("staleness (max)", 0), std::string("4 [3, 5]"));
    // A synchronous variant has no divergence to measure; an asynchronous one that did not.
    QCOMPARE(cell("divergence", 0), std::string("none: replicas identical"));
    QCOMPARE(cell("divergence", 1), std::string("not measured"));
    QCOMPARE(cell("node loss", 0), std::string("not measured"));
    QCOMPARE(cell("node loss", 1), std::string("survived 1 (2.50 s, 4 steps lost)"));
    // A run that failed because a node was lost counts by its stop reason; an error whose words
    // mention a loss does not.
    c.rows[8].error = "rank 1: lost its way";
    QCOMPARE(seedTable(c, comparisonStatistics(c)).rows.size(), t.rows.size());
    const auto nodeLoss = [&](const Comparison& with) {
      for (const auto& row : seedTable(with, comparisonStatistics(with)).rows)
        if (row[1] == "node loss") return row[3];
      return std::string();
    };
    QCOMPARE(nodeLoss(c), std::string("survived 1 (2.50 s, 4 steps lost)"));
    c.rows[8].stopReason = StopReason::kNodeLost;
    QCOMPARE(nodeLoss(c), std::string("survived 1 (2.50 s, 4 steps lost); 1 run failed"));
    QCOMPARE(cell("replayable", 0), std::string("from its seed"));
    QCOMPARE(cell("replayable", 1), std::string("from its record: dtlab-cli replay"));

    const nlohmann::json json = statisticsTableJson(t);
    QCOMPARE(json["header"].size(), std::size_t{4});
    QCOMPARE(json["rows"][3][2]["text"].get<std::string>(), std::string("100 [90, 110]"));
    QVERIFY(!json["rows"][3][2]["how"].get<std::string>().empty());
    QVERIFY(contains(seedTableText(c), "fault tolerance"));
  }
};

QTEST_GUILESS_MAIN(TestExecutions)
#include "test_executions.moc"
