// The variants table is the strategies' descriptors: a strategy registered by this test binary
// alone (tests/core/dummy_strategy.h) gets its columns, labels, tooltips, choices, defaults and
// greyed cells, and its rows write specs the parser accepts, with no change to the GUI.
// Offscreen.
#include <QtTest/QtTest>

#include <QtTest/QAbstractItemModelTester>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "tests/core/dummy_strategy.h"
#include "ui/models/variants_model.h"
#include "ui/pages/experiment_page.h"

using namespace dtlab;
using V = ui::VariantsModel;

class TestVariantsRegistry : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { core::test::registerDummyStrategy(); }

  void aRegisteredStrategyIsEditedLikeTheBuiltIns() {
    ui::ExperimentPage page;
    const nlohmann::json spec = {{"name", "mixing"},
                                 {"cluster", {{"local_nodes", 2}}},
                                 {"variants",
                                  {{{"name", "sync"}, {"strategy", "sync_allreduce"}},
                                   {{"name", "mix"}, {"strategy", core::test::kDummyStrategy}}}}};
    page.edit(-1, spec, {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    V* model = page.variants();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);

    // Its settings are columns after the built-ins', with the descriptor's words.
    const int every = model->columnOf("every");
    const int mode = model->columnOf("mode");
    const int root = model->columnOf("root");
    QVERIFY(every > model->columnOf("window") && mode == every + 1 && root == mode + 1);
    QCOMPARE(model->columnCount(), root + 1);
    QCOMPARE(model->headerData(every, Qt::Horizontal).toString(), QString("Mix\nevery"));
    QCOMPARE(model->headerData(mode, Qt::Horizontal, Qt::ToolTipRole).toString(),
             QString("average: the replicas' mean; broadcast: one rank's weights"));
    QVERIFY(model->index(0, V::kStrategyColumn)
                .data(V::ChoicesRole)
                .toStringList()
                .contains(core::test::kDummyStrategy));
    QCOMPARE(model->index(1, mode).data(V::ChoicesRole).toStringList(),
             QStringList({"average", "broadcast"}));

    // Its row: its own cells with their defaults; root only in the broadcast mode; the
    // built-ins' settings grey. The sync row: its cells grey, naming who reads them.
    QCOMPARE(model->index(1, every).data().toLongLong(), qint64{4});
    QCOMPARE(model->index(1, mode).data().toString(), QString("average"));
    QVERIFY(!(model->flags(model->index(1, root)) & Qt::ItemIsEditable));
    QCOMPARE(model->index(1, root).data(Qt::ToolTipRole).toString(),
             QString("Only with \"mode\": \"broadcast\" does root apply"));
    QVERIFY(!(model->flags(model->index(1, model->columnOf("bucket_kb"))) & Qt::ItemIsEditable));
    QVERIFY(!(model->flags(model->index(0, every)) & Qt::ItemIsEditable));
    QCOMPARE(model->index(0, every).data(Qt::ToolTipRole).toString(),
             QString("Only test_mixing reads every"));

    // Edits write the spec the parser reads; a change of mode drops root again.
    QVERIFY(model->setData(model->index(1, mode), "broadcast"));
    QVERIFY(model->flags(model->index(1, root)) & Qt::ItemIsEditable);
    QCOMPARE(model->index(1, root).data().toLongLong(), qint64{0});
    QVERIFY(model->setData(model->index(1, root), "1"));
    QVERIFY(model->setData(model->index(1, every), "3"));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    const core::ExperimentSpec parsed = core::parseExperimentSpec(page.spec());
    QCOMPARE(*parsed.variants[1].settings.find("root"), core::SettingValue(int64_t{1}));
    QCOMPARE(*parsed.variants[1].settings.find("every"), core::SettingValue(int64_t{3}));
    // Its own check speaks through the page: root 2 is not a rank of two nodes.
    QVERIFY(model->setData(model->index(1, root), "2"));
    QVERIFY2(page.error().startsWith("variants[1].root: must be a rank"), qPrintable(page.error()));
    QVERIFY(model->setData(model->index(1, mode), "average"));
    QVERIFY(!page.spec()["variants"][1].contains("root"));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    // Switching the sync row to it keeps nothing of sync_allreduce's.
    QVERIFY(model->setData(model->index(0, model->columnOf("bucket_kb")), "256"));
    QVERIFY(model->setData(model->index(0, V::kStrategyColumn), core::test::kDummyStrategy));
    QCOMPARE(page.spec()["variants"][0],
             nlohmann::json({{"name", "sync"}, {"strategy", core::test::kDummyStrategy}}));
  }

  // on_node_loss is a column like any setting: "restart" asks for checkpoints, which the
  // form's "Checkpoint every (steps)" keeps.
  void aRestartingVariantAsksForCheckpoints() {
    ui::ExperimentPage page;
    nlohmann::json spec = {{"name", "elastic"},
                           {"cluster", {{"local_nodes", 2}}},
                           {"variants", {{{"name", "sync"}, {"strategy", "sync_allreduce"}}}}};
    page.edit(-1, spec, {}, {});
    V* model = page.variants();
    const int onLoss = model->columnOf("on_node_loss");
    QVERIFY(onLoss >= 0);
    QCOMPARE(model->index(0, onLoss).data(V::ChoicesRole).toStringList(),
             QStringList({"fail", "restart"}));
    QVERIFY(model->setData(model->index(0, onLoss), "restart"));
    QVERIFY2(page.error().startsWith("variants[0].on_node_loss: \"restart\" continues from"),
             qPrintable(page.error()));
    spec["training"] = {{"checkpoint_every", 25}};
    spec["variants"][0]["on_node_loss"] = "restart";
    page.edit(-1, spec, {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QCOMPARE(page.spec()["training"]["checkpoint_every"], nlohmann::json(25));
    QCOMPARE(page.spec()["variants"][0]["on_node_loss"], nlohmann::json("restart"));
  }
};

QTEST_MAIN(TestVariantsRegistry)
#include "test_variants_registry.moc"
