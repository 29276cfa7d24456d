// The dataset page and `bench data` are the dataset kinds' descriptors: a kind registered by
// this test binary alone (tests/core/dummy_dataset.h) is listed with its summary, gets rows for
// its parameters with the descriptor's labels, ranges and help (a conditional one shown only
// while its condition holds), writes configs the parser accepts, is previewed from its own
// generator, and is measured by the benchmark, with no change to the GUI or the bench.
// Offscreen.
#include <QtTest/QtTest>

#include <qcustomplot.h>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QSpinBox>

#include <cstdio>

#include "core/data/dataset_kinds.h"
#include "core/spec/spec_json.h"
#include "remote/bench/bench_data.h"
#include "tests/core/dummy_dataset.h"
#include "ui/pages/dataset_page.h"

using namespace dtlab;

class TestDatasetRegistryGui : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { core::test::registerDummyDatasetKind(); }

  void aRegisteredKindIsEditedLikeTheBuiltIns() {
    ui::DatasetPage page;
    QSignalSpy previewed(&page, &ui::DatasetPage::previewShown);
    auto* kind = page.findChild<QComboBox*>("kind");
    const int index = kind->findText(core::test::kDummyKind);
    QVERIFY(index > 0);
    QCOMPARE(kind->itemData(index, Qt::ToolTipRole).toString(),
             QString::fromStdString(core::test::dummyDatasetKind().summary));

    page.edit(-1, "rings", {{"kind", core::test::kDummyKind}, {"gap", 2.5}});
    QVERIFY(previewed.wait(20000));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    auto* gap = page.findChild<QDoubleSpinBox*>("gap");
    QVERIFY(gap != nullptr && !gap->isHidden());
    QCOMPARE(gap->value(), 2.5);
    QCOMPARE(gap->maximum(), 10.0);
    QVERIFY(gap->toolTip().contains("Distance between neighbouring rings"));
    QVERIFY(page.findChild<QWidget*>("separation")->isHidden());   // another kind's
    QVERIFY(page.findChild<QWidget*>("tilt")->isHidden());         // only for bands
    QCOMPARE(page.findChild<QSpinBox*>("classes")->value(), 3);    // the kind's default
    QVERIFY(!page.findChild<QSpinBox*>("features")->isEnabled());  // fixed at 2
    QCOMPARE(page.findChild<QSpinBox*>("features")->value(), 2);

    // The preview is its own generator's samples: one graph per ring.
    QCOMPARE(page.preview().classes, int64_t{3});
    QCOMPARE(page.scatter()->graphCount(), 3);
    QVERIFY(page.preview().images.empty());

    // Choosing "bands" shows the parameter that applies only to it; the form writes what the
    // parser accepts, this kind's parameters and no other's.
    previewed.clear();
    page.findChild<QComboBox*>("layout")->setCurrentText("bands");
    QVERIFY(!page.findChild<QWidget*>("tilt")->isHidden());
    page.findChild<QDoubleSpinBox*>("tilt")->setValue(0.5);
    QVERIFY(previewed.wait(20000));
    const nlohmann::json config = page.config();
    QCOMPARE(config["layout"], nlohmann::json("bands"));
    QCOMPARE(config["tilt"], nlohmann::json(0.5));
    QVERIFY(!config.contains("separation") && !config.contains("features"));
    const core::ExperimentSpec spec = core::parseExperimentSpec({{"dataset", config}});
    QCOMPARE(spec.dataset.kind, std::string(core::test::kDummyKind));

    // The kind's own check speaks in the form, and the field it names is marked, by the
    // error's path: the editor of the kind's parameter, then none once the form is valid.
    auto* jitter = page.findChild<QDoubleSpinBox*>("jitter");
    jitter->setValue(0.9);
    QVERIFY2(page.error().contains("dataset.jitter"), qPrintable(page.error()));
    QCOMPARE(page.errorField(), QString("dataset.jitter"));
    QVERIFY(jitter->styleSheet().contains("border"));
    jitter->setValue(0.05);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QVERIFY(page.errorField().isEmpty());
    QVERIFY(jitter->styleSheet().isEmpty());

    // Another kind: its own rows and defaults.
    kind->setCurrentText("two_spirals");
    QVERIFY(page.findChild<QWidget*>("gap")->isHidden());
    QVERIFY(!page.findChild<QWidget*>("turns")->isHidden());
    QCOMPARE(page.findChild<QSpinBox*>("classes")->value(), 2);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
  }

  // A dataset of a kind this build does not have keeps its kind: the form names the problem
  // and refuses Save instead of saving it as another kind.
  void anUnknownKindIsSaidNotReplaced() {
    ui::DatasetPage page;
    page.edit(7, "plugged", {{"kind", "test_not_here"}, {"train_size", 500}});
    QCOMPARE(page.config()["kind"], nlohmann::json("test_not_here"));
    QVERIFY2(page.error().contains("dataset.kind"), qPrintable(page.error()));
    QVERIFY(!page.saveButton()->isEnabled());
  }

  void benchDataMeasuresIt() {
    const std::vector<std::string> kinds = bench::dataBenchKinds();
    QCOMPARE(kinds.back(), std::string(core::test::kDummyKind));
    bench::DataBenchOptions options;
    options.kinds = {core::test::kDummyKind};
    options.samples = 2000;
    options.repetitions = 1;
    std::FILE* out = std::tmpfile();
    const bench::DataBenchResult result = bench::runDataBench(options, out);
    std::fclose(out);
    QCOMPARE(result.kinds.size(), std::size_t{1});
    QCOMPARE(result.kinds[0].kind, std::string(core::test::kDummyKind));
    QCOMPARE(result.kinds[0].features, int64_t{2});
    QVERIFY(result.kinds[0].hostRate > 0.0);
  }
};

QTEST_MAIN(TestDatasetRegistryGui)
#include "test_dataset_registry_gui.moc"
