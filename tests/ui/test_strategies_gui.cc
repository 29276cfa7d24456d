// The GUI of every registered strategy (core/train/strategy_registry.cc): the variants editor sets
// every strategy's fields (and only its own, which the spec's parser insists on), and the compare
// page shows the figures of `dtlab-cli compare` (core/analysis/comparison) for each run. Offscreen.
#include <QtTest/QtTest>

#include <QtCore/QTemporaryDir>
#include <QtTest/QAbstractItemModelTester>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QTableView>

#include <optional>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/train/strategy_registry.h"
#include "tests/ui/ui_support.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_comparison_model.h"
#include "ui/models/variants_model.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

using namespace dtlab;
using V = ui::VariantsModel;
using M = ui::RunComparisonModel;

namespace {

// Every setting of some strategies (or of one partition or policy) only.
const char* const kStrategyFields[] = {
    "bucket_kb", "partition", "rebalance_every", "ps_shards", "staleness",  "period",
    "policy",    "switch_at", "straggler_ratio", "window",    "compression"};

// The value a parsed variant holds for `key`.
core::SettingValue at(const core::VariantConfig& v, const std::string& key) {
  const core::SettingValue* value = v.settings.find(key);
  return value != nullptr ? *value : core::SettingValue(std::string("(none)"));
}

// A spec of four local nodes with one variant per strategy, for the editor.
nlohmann::json editorSpec() {
  nlohmann::json variants = nlohmann::json::array();
  for (const std::string& s : core::strategyNames())
    variants.push_back({{"name", s}, {"strategy", s}});
  return {{"name", "strategies"}, {"cluster", {{"local_nodes", 4}}}, {"variants", variants}};
}

}  // namespace

class TestStrategiesGui : public QObject {
  Q_OBJECT
 private slots:
  // Each strategy's own cells are editable and write their field into the spec; the others
  // are empty, not editable, and a write to them is refused (the parser would refuse it).
  void eachFieldIsEditableOnlyForItsStrategy() {
    ui::ExperimentPage page;
    page.edit(-1, editorSpec(), {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    V* model = page.variants();
    const auto c = [model](const char* key) { return model->columnOf(key); };
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model->rowCount(), 5);
    // Which columns each row (strategy) may set, and a valid value for each.
    const std::map<int, QVariant> valid = {{c("bucket_kb"), "256"}, {c("ps_shards"), "2"},
                                           {c("staleness"), "5"},   {c("period"), 4},
                                           {c("switch_at"), 0.25},  {c("straggler_ratio"), 2.0},
                                           {c("window"), "10"}};
    const std::map<std::string, std::set<int>> own = {
        {"sync_allreduce", {c("bucket_kb"), c("partition"), c("compression")}},
        {"async_ps", {c("ps_shards"), c("compression")}},
        {"ssp", {c("ps_shards"), c("staleness"), c("compression")}},
        {"local_sgd", {c("period"), c("compression")}},
        {"hybrid", {c("bucket_kb"), c("ps_shards"), c("policy"), c("switch_at"), c("compression")}},
    };
    for (int row = 0; row < model->rowCount(); ++row) {
      const std::string strategy = core::strategyNames()[static_cast<std::size_t>(row)];
      for (const char* key : kStrategyFields) {
        const int column = c(key);
        const QModelIndex cell = model->index(row, column);
        const bool mine = own.at(strategy).count(column) != 0;
        const QString where = QString("%1, %2").arg(strategy.c_str(), model->keyOf(column));
        QVERIFY2(bool(model->flags(cell) & Qt::ItemIsEditable) == mine, qPrintable(where));
        QCOMPARE(cell.data(V::AppliesRole).toBool(), mine);
        if (!mine) {
          QVERIFY2(!cell.data().isValid(), qPrintable(where));  // shown empty
          QVERIFY(cell.data(Qt::ToolTipRole).toString().startsWith("Only "));
          QVERIFY(!model->setData(cell, valid.count(column) ? valid.at(column) : QVariant("x")));
          QVERIFY2(!page.spec()["variants"][row].contains(model->keyOf(column).toStdString()),
                   qPrintable(where));
          continue;
        }
        if (!valid.count(column)) continue;
        QVERIFY2(model->setData(cell, valid.at(column)), qPrintable(where));
        const nlohmann::json written =
            page.spec()["variants"][row][model->keyOf(column).toStdString()];
        QVERIFY2(written.is_number(), qPrintable(where + ": " + written.dump().c_str()));
        QCOMPARE(written.get<double>(), valid.at(column).toDouble());
        QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
      }
    }
    // The spec's defaults where a field is left out, as the parser fills them in.
    QCOMPARE(model->index(1, c("ps_shards")).data().toString(), QString("2"));
    QVERIFY(model->setData(model->index(1, c("ps_shards")), "all"));
    QVERIFY(!page.spec()["variants"][1].contains("ps_shards"));
    QCOMPARE(model->index(1, c("ps_shards")).data().toString(), QString("all"));
    QCOMPARE(model->index(4, c("policy")).data().toString(), QString("sync_then_async"));
    QCOMPARE(model->index(4, c("policy")).data(V::ChoicesRole).toStringList(),
             QStringList({"sync_then_async", "adaptive"}));

    // The adaptive policy: its ratio and window become editable, the switch point goes.
    QVERIFY(model->setData(model->index(4, c("policy")), "adaptive"));
    QVERIFY(!page.spec()["variants"][4].contains("switch_at"));
    QVERIFY(!(model->flags(model->index(4, c("switch_at"))) & Qt::ItemIsEditable));
    QCOMPARE(model->index(4, c("straggler_ratio")).data().toDouble(), 1.5);
    QCOMPARE(model->index(4, c("window")).data().toLongLong(), qint64{20});
    QVERIFY(model->setData(model->index(4, c("straggler_ratio")), 2.0));
    QVERIFY(model->setData(model->index(4, c("window")), "10"));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    // What the editor wrote is what the spec reads.
    const core::ExperimentSpec parsed = core::parseExperimentSpec(page.spec());
    QCOMPARE(at(parsed.variants[2], "staleness"), core::SettingValue(int64_t{5}));
    QCOMPARE(at(parsed.variants[2], "ps_shards"), core::SettingValue(int64_t{2}));
    QCOMPARE(at(parsed.variants[3], "period"), core::SettingValue(int64_t{4}));
    QCOMPARE(at(parsed.variants[4], "policy"), core::SettingValue(std::string("adaptive")));
    QCOMPARE(at(parsed.variants[4], "straggler_ratio"), core::SettingValue(2.0));
    QCOMPARE(at(parsed.variants[4], "window"), core::SettingValue(int64_t{10}));
  }

  // Compression: its kind is a choice of every strategy that reads it, and each kind's own
  // setting becomes editable with it (topk's ratio, PowerSGD's rank) and goes with it.
  void compressionFieldsFollowTheKind() {
    ui::ExperimentPage page;
    page.edit(-1, editorSpec(), {}, {});
    V* model = page.variants();
    const auto c = [model](const char* key) { return model->columnOf(key); };
    QCOMPARE(model->index(0, c("compression")).data(V::ChoicesRole).toStringList(),
             QStringList({"none", "fp16", "bf16", "topk", "powersgd"}));
    QVERIFY(!(model->flags(model->index(0, c("topk_ratio"))) & Qt::ItemIsEditable));
    QVERIFY(model->setData(model->index(0, c("compression")), "topk"));
    QVERIFY(model->flags(model->index(0, c("topk_ratio"))) & Qt::ItemIsEditable);
    QCOMPARE(model->index(0, c("topk_ratio")).data().toDouble(), 0.01);
    QVERIFY(model->setData(model->index(0, c("topk_ratio")), 0.05));
    QVERIFY(model->setData(model->index(0, c("start_step")), "20"));
    QVERIFY(!(model->flags(model->index(0, c("powersgd_rank"))) & Qt::ItemIsEditable));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    core::ExperimentSpec parsed = core::parseExperimentSpec(page.spec());
    QCOMPARE(at(parsed.variants[0], "topk_ratio"), core::SettingValue(0.05));
    QCOMPARE(at(parsed.variants[0], "start_step"), core::SettingValue(int64_t{20}));
    // PowerSGD instead: the ratio goes, the rank comes, start_step stays.
    QVERIFY(model->setData(model->index(0, c("compression")), "powersgd"));
    QVERIFY(!page.spec()["variants"][0].contains("topk_ratio"));
    QVERIFY(model->setData(model->index(0, c("powersgd_rank")), "4"));
    parsed = core::parseExperimentSpec(page.spec());
    QCOMPARE(at(parsed.variants[0], "powersgd_rank"), core::SettingValue(int64_t{4}));
    QCOMPARE(at(parsed.variants[0], "start_step"), core::SettingValue(int64_t{20}));
    // A parameter server's strategy offers no powersgd (it factorises a sum over workers).
    QCOMPARE(model->index(1, c("compression")).data(V::ChoicesRole).toStringList(),
             QStringList({"none", "fp16", "bf16", "topk"}));
  }

  // A new strategy, partition or policy drops the fields that no longer apply, so the spec
  // stays one the parser accepts.
  void switchingStrategyDropsInapplicableFields() {
    ui::ExperimentPage page;
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.edit(-1, editorSpec(), {}, {});
    V* model = page.variants();
    const auto c = [model](const char* key) { return model->columnOf(key); };
    QSignalSpy changed(model, &QAbstractItemModel::dataChanged);
    QVERIFY(model->setData(model->index(2, c("ps_shards")), 3));
    QVERIFY(model->setData(model->index(2, c("staleness")), 1));
    changed.clear();
    // In the table, as a user picks it from the combo box of the spec's names.
    auto* view = page.findChild<QTableView*>();
    const QModelIndex strategy = model->index(2, V::kStrategyColumn);
    view->edit(strategy);
    auto* box = view->viewport()->findChild<QComboBox*>();
    QVERIFY(box != nullptr);
    QCOMPARE(box->count(), static_cast<int>(core::strategyNames().size()));
    box->setCurrentText("local_sgd");
    QTest::keyClick(box, Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(page.spec()["variants"][2]["strategy"], nlohmann::json("local_sgd"),
                              5000);
    const nlohmann::json row = page.spec()["variants"][2];
    QVERIFY2(!row.contains("ps_shards") && !row.contains("staleness"), row.dump().c_str());
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    // The whole row changed: its cells now show local_sgd's period and nothing of ssp.
    QVERIFY(!changed.isEmpty());
    QCOMPARE(changed.last().at(0).toModelIndex().column(), 0);
    QCOMPARE(changed.last().at(1).toModelIndex().column(), model->columnCount() - 1);
    QCOMPARE(model->index(2, c("period")).data().toLongLong(), qint64{8});
    QVERIFY(!model->index(2, c("staleness")).data().isValid());

    // sync_allreduce by speed to async_ps: partition and rebalance period go.
    QVERIFY(model->setData(model->index(0, c("partition")), "speed_proportional"));
    QVERIFY(model->setData(model->index(0, c("rebalance_every")), 7));
    QCOMPARE(page.spec()["variants"][0]["rebalance_every"], nlohmann::json(7));
    QVERIFY(model->setData(model->index(0, V::kStrategyColumn), "async_ps"));
    QVERIFY(!page.spec()["variants"][0].contains("partition"));
    QVERIFY(!page.spec()["variants"][0].contains("rebalance_every"));
    // hybrid to ssp: policy and switch point go, the shards stay (both use a server).
    QVERIFY(model->setData(model->index(4, c("switch_at")), 0.3));
    QVERIFY(model->setData(model->index(4, c("ps_shards")), 2));
    QVERIFY(model->setData(model->index(4, V::kStrategyColumn), "ssp"));
    QCOMPARE(page.spec()["variants"][4],
             nlohmann::json({{"name", "hybrid"}, {"strategy", "ssp"}, {"ps_shards", 2}}));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
  }

  // A value out of range, or not a number, is kept as typed and the parser's message stands
  // under the variants table, naming the field.
  void invalidValuesShowTheParsersMessage() {
    ui::ExperimentPage page;
    page.edit(-1, editorSpec(), {}, {});
    V* model = page.variants();
    const auto c = [model](const char* key) { return model->columnOf(key); };
    struct Case {
      int row, column;
      QVariant value;
      QString path;
    };
    const Case cases[] = {
        {2, c("staleness"), "-1", "variants[2].staleness"},
        {3, c("period"), "0", "variants[3].period"},
        {3, c("period"), "often", "variants[3].period"},
        {1, c("ps_shards"), "5", "variants[1].ps_shards"},  // more than the 4 nodes
        {4, c("switch_at"), "1.0", "variants[4].switch_at"},
        {4, c("policy"), "adaptiv", "variants[4].policy"},
    };
    for (const Case& c : cases) {
      const nlohmann::json before = page.spec()["variants"];
      QVERIFY(model->setData(model->index(c.row, c.column), c.value));
      QVERIFY2(page.error().startsWith(c.path + ": "), qPrintable(page.error()));
      QCOMPARE(page.errorField(), QString("variants"));
      QVERIFY(!page.saveButton()->isEnabled());
      // The same message as the parser's for the spec as written.
      try {
        core::parseExperimentSpec(page.spec());
        QFAIL("the parser accepted it");
      } catch (const core::SpecError& e) {
        QCOMPARE(page.error(), QString::fromUtf8(e.what()));
      }
      model->setVariants(before);
      emit model->dataChanged(model->index(0, 0), model->index(0, 0));
      QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    }
  }

  // The compare page's rows are the figures `dtlab-cli compare` prints for each run (the
  // summaries' values), with the outcome in its words.
  void compareRowsAreTheCoreComparisonRows() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    std::vector<core::RunSummary> summaries(3);
    {
      auto store = core::ProjectStore::create(path);
      nlohmann::json spec = {{"name", "exp"},
                             {"training", {{"target_accuracy", 0.9}}},
                             {"variants",
                              {{{"name", "sync"}, {"strategy", "sync_allreduce"}},
                               {{"name", "async"}, {"strategy", "async_ps"}},
                               {{"name", "stale"}, {"strategy", "ssp"}}}}};
      const int64_t experiment = store->putEntity(core::EntityKind::kExperiment, "exp", spec);
      const char* names[] = {"sync", "async", "stale"};
      const char* strategies[] = {"sync_allreduce", "async_ps", "ssp"};
      for (int i = 0; i < 3; ++i) {
        core::RunStart start;
        start.experimentId = experiment;
        start.name = std::string("exp/") + names[i];
        start.strategy = strategies[i];
        start.spec = spec;
        const int64_t id = store->beginRun(start);
        core::RunSummary& s = summaries[static_cast<std::size_t>(i)];
        s.name = start.name;
        s.strategy = strategies[i];
        s.status = core::RunStatus::kCompleted;
        s.stopReason = i == 1 ? core::StopReason::kMaxSeconds : core::StopReason::kTargetAccuracy;
        s.steps = 100 + i;
        s.samplesPerS = 1000.0 * (i + 1);
        s.finalTestAccuracy = i == 1 ? 0.85 : 0.91;
        if (i != 1) s.timeToTargetS = 2.5 + i;
        s.meanUtilization = 0.5 + 0.1 * i;
        s.meanWaitFraction = 0.3 - 0.1 * i;
        s.meanStaleness = i == 0 ? 0.0 : 1.25 * i;
        s.maxStaleness = i == 0 ? 0.0 : 3.0 * i;
        if (i != 0) s.meanDivergence = 0.0125 * i;
        s.bytesPerSample = 4096.0 / (i + 1);
        s.peakMemBytes = {int64_t{40} << 20, int64_t{(50 + i)} << 20};
        store->finishRun(id, s);
      }
    }
    M model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const ui::ProjectSnapshot snapshot = ui_test::snapshotAt(path);
    model.setSnapshot(snapshot);
    QCOMPARE(model.rowCount(), 3);
    // What `dtlab-cli compare` shows for these summaries, by hand: the summaries' figures,
    // the largest worker's peak memory, no time to target when it was not reached, and the
    // outcome in the command's words.
    struct Row {
      const char* variant;
      double meanStaleness, maxStaleness;
      std::optional<double> divergence, timeToTargetS;
      double samplesPerS, utilization, waitFraction, bytesPerSample;
      qint64 peakMemBytes;
      double accuracy;
      const char* outcome;
    };
    const Row rows[] = {
        {"sync", 0.0, 0.0, std::nullopt, 2.5, 1000.0, 0.5, 0.3, 4096.0, qint64{50} << 20, 0.91,
         "target reached"},
        {"async", 1.25, 3.0, 0.0125, std::nullopt, 2000.0, 0.6, 0.2, 2048.0, qint64{51} << 20, 0.85,
         "time limit, target not reached"},
        {"stale", 2.5, 6.0, 0.025, 4.5, 3000.0, 0.7, 0.1, 4096.0 / 3.0, qint64{52} << 20, 0.91,
         "target reached"},
    };
    for (int i = 0; i < 3; ++i) {
      const Row& want = rows[i];
      const core::RunRecord& run = snapshot.runs[static_cast<std::size_t>(i)];
      const auto value = [&](int column) { return model.index(i, column).data(M::ValueRole); };
      QCOMPARE(value(M::kMeanStalenessColumn).toDouble(), want.meanStaleness);
      QCOMPARE(value(M::kMaxStalenessColumn).toDouble(), want.maxStaleness);
      QCOMPARE(value(M::kDivergenceColumn).isValid(), want.divergence.has_value());
      if (want.divergence) QCOMPARE(value(M::kDivergenceColumn).toDouble(), *want.divergence);
      QCOMPARE(value(M::kTimeToTargetColumn).isValid(), want.timeToTargetS.has_value());
      if (want.timeToTargetS)
        QCOMPARE(value(M::kTimeToTargetColumn).toDouble(), *want.timeToTargetS);
      QCOMPARE(value(M::kSamplesPerSColumn).toDouble(), want.samplesPerS);
      QCOMPARE(value(M::kUtilizationColumn).toDouble(), want.utilization);
      QCOMPARE(value(M::kWaitColumn).toDouble(), want.waitFraction);
      QCOMPARE(value(M::kBytesPerSampleColumn).toDouble(), want.bytesPerSample);
      QCOMPARE(value(M::kPeakMemoryColumn).toLongLong(), want.peakMemBytes);
      QCOMPARE(value(M::kAccuracyColumn).toDouble(), want.accuracy);
      QCOMPARE(model.index(i, M::kOutcomeColumn).data().toString(), QString(want.outcome));
      // The variant's name, as the command names it; the tooltip has the run's whole name.
      QCOMPARE(model.index(i, M::kRunColumn).data().toString(),
               QString("#%1 %2").arg(run.id).arg(want.variant));
      QVERIFY(model.index(i, M::kRunColumn).data(Qt::ToolTipRole).toString().contains("exp/"));
    }
    QCOMPARE(model.index(0, M::kOutcomeColumn).data().toString(), QString("target reached"));
    QCOMPARE(model.index(1, M::kOutcomeColumn).data().toString(),
             QString("time limit, target not reached"));
    QCOMPARE(model.index(1, M::kTimeToTargetColumn).data().toString(), QString("not reached"));
    // Divergence: three significant digits as the command prints it; a synchronous run has
    // none, and the tooltip says why.
    QCOMPARE(model.index(1, M::kDivergenceColumn).data().toString(), QString("0.0125"));
    QCOMPARE(model.index(0, M::kDivergenceColumn).data().toString(), QString("\u2013"));
    QVERIFY(model.index(0, M::kDivergenceColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("Only strategies with a parameter server (async_ps, ssp and hybrid)"));
  }

  // The training data's partition: shared by default, Dirichlet with its alpha, which only
  // Dirichlet writes; a speed_proportional variant on shards is the parser's error.
  void trainingDataPartitionIsEditable() {
    ui::ExperimentPage page;
    page.edit(-1, editorSpec(), {}, {});
    const auto c = [&page](const char* key) { return page.variants()->columnOf(key); };
    auto* kind = qobject_cast<QComboBox*>(page.field("training.data_partition.kind"));
    auto* alpha = qobject_cast<QDoubleSpinBox*>(page.field("training.data_partition.alpha"));
    QVERIFY(kind != nullptr && alpha != nullptr);
    QCOMPARE(page.spec()["training"]["data_partition"], nlohmann::json({{"kind", "shared"}}));
    QVERIFY(!alpha->isEnabled());
    kind->setCurrentIndex(kind->findData("dirichlet"));
    alpha->setValue(0.2);
    QVERIFY(alpha->isEnabled());
    QCOMPARE(page.spec()["training"]["data_partition"],
             nlohmann::json({{"kind", "dirichlet"}, {"alpha", 0.2}}));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QCOMPARE(core::parseExperimentSpec(page.spec()).training.dataPartition.alpha, 0.2);
    // Shards and a scheduler that slices global batches of the whole set do not mix.
    page.variants()->setData(page.variants()->index(0, c("partition")), "speed_proportional");
    QVERIFY2(page.error().contains("speed_proportional"), qPrintable(page.error()));
    page.variants()->setData(page.variants()->index(0, c("partition")), "equal");
    kind->setCurrentIndex(kind->findData("iid"));
    QCOMPARE(page.spec()["training"]["data_partition"], nlohmann::json({{"kind", "iid"}}));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    // A stored spec's partition is what the form shows.
    nlohmann::json stored = editorSpec();
    stored["training"] = {{"data_partition", {{"kind", "dirichlet"}, {"alpha", 0.05}}}};
    page.edit(-1, stored, {}, {});
    QCOMPARE(kind->currentData().toString(), QString("dirichlet"));
    QCOMPARE(alpha->value(), 0.05);
    QVERIFY(!page.isModified());
  }

  // GPUs: the topology says where workers train, the experiment its precision; reduced
  // precision on a CPU topology is the parser's error, shown at the precision row.
  void gpuTopologyAndPrecisionAreEditable() {
    ui::TopologyPage topology;
    topology.edit(-1, "gpus", {{"local_nodes", 1}, {"device", "cuda"}});
    auto* device = topology.findChild<QComboBox*>("device");
    QVERIFY(device != nullptr);
    QCOMPARE(device->currentData().toString(), QString("cuda"));
    QCOMPARE(topology.cluster()["device"], nlohmann::json("cuda"));
    QVERIFY2(topology.error().isEmpty(), qPrintable(topology.error()));
    device->setCurrentIndex(device->findData("cpu"));
    QCOMPARE(topology.cluster()["device"], nlohmann::json("cpu"));
    // A device the form does not offer stays as written, and the parser names it.
    topology.edit(-1, "odd", {{"local_nodes", 1}, {"device", "tpu"}});
    QVERIFY2(topology.error().startsWith("cluster.device"), qPrintable(topology.error()));

    ui::ExperimentPage page;
    page.edit(-1, editorSpec(), {}, {});
    auto* precision = qobject_cast<QComboBox*>(page.field("training.precision"));
    QVERIFY(precision != nullptr);
    QCOMPARE(page.spec()["training"]["precision"], nlohmann::json("fp32"));
    precision->setCurrentIndex(precision->findData("bf16"));
    QCOMPARE(page.errorField(), QString("training.precision"));
    QVERIFY2(page.error().contains("needs \"cluster\": {\"device\": \"cuda\"}"),
             qPrintable(page.error()));
    nlohmann::json onGpus = editorSpec();
    onGpus["cluster"]["device"] = "cuda";
    onGpus["training"] = {{"precision", "tf32"}};
    // Every strategy runs on GPUs (the parameter-server ones through a host mirror).
    page.edit(-1, onGpus, {}, {});
    QCOMPARE(precision->currentData().toString(), QString("tf32"));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QCOMPARE(core::parseExperimentSpec(page.spec()).training.precision, core::Precision::kTf32);
  }
};

QTEST_MAIN(TestStrategiesGui)
#include "test_strategies_gui.moc"
