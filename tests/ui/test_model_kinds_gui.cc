// The experiment page's model is the model kinds' descriptors: a kind registered by this test
// binary alone (tests/core/dummy_model.h) is offered beside mlp, its setting gets a row with
// the descriptor's label, range and help, and the specs the page writes for it are the parser's,
// with no change to the GUI. The cnn is edited with its footprint shown; it and the transformer
// are made, run and compared from the window; sequence datasets are previewed as tokens.
// Offscreen.
#include <QtTest/QtTest>

#include <algorithm>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QSpinBox>

#include <QtCore/QRegularExpression>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QPushButton>

#include <qcustomplot.h>

#include "core/nn/model_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "tests/core/dummy_model.h"
#include "ui/charts/comparison_chart.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/variants_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

using namespace dtlab;

class TestModelKindsGui : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { core::test::registerDummyModelKind(); }

  void aRegisteredModelKindIsEditedLikeTheBuiltIn() {
    ui::ExperimentPage page;
    page.edit(-1, {{"name", "linear"}, {"cluster", {{"local_nodes", 2}}}}, {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    auto* kind = qobject_cast<QComboBox*>(page.field("model.kind"));
    auto* gain = page.findChild<QDoubleSpinBox*>("init_gain");
    auto* hidden = qobject_cast<QLineEdit*>(page.field("model.hidden"));
    QVERIFY(kind != nullptr && gain != nullptr && hidden != nullptr);
    // The default kind first; the test's own after it, with its summary as the tooltip.
    QCOMPARE(kind->itemText(0), QString("mlp"));
    QCOMPARE(kind->currentText(), QString("mlp"));
    const int linear = kind->findText(core::test::kDummyModel);
    QVERIFY(linear > 0);
    QCOMPARE(kind->itemData(linear, Qt::ToolTipRole).toString(),
             QString("softmax regression (a test's own kind)"));
    QCOMPARE(page.spec()["model"]["kind"], nlohmann::json("mlp"));
    QVERIFY(!page.spec()["model"].contains("init_gain"));
    QVERIFY(gain->isHidden());

    // Chosen: its row shows with the descriptor's words and default; the spec the page writes
    // is one the parser accepts once the form suits the kind (no hidden layers).
    kind->setCurrentIndex(linear);
    QVERIFY(!gain->isHidden());
    QCOMPARE(gain->value(), 1.0);
    QVERIFY2(gain->toolTip().contains("multiplies the initial weights"),
             qPrintable(gain->toolTip()));
    QVERIFY2(page.error().contains("no hidden layers"), qPrintable(page.error()));
    hidden->setText("");
    gain->setValue(0.5);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    const core::ExperimentSpec parsed = core::parseExperimentSpec(page.spec());
    QCOMPARE(parsed.model.kind, std::string(core::test::kDummyModel));
    QCOMPARE(core::findModelKind(core::test::kDummyModel)->view(parsed.model).real("init_gain"),
             0.5);

    // Back to mlp: the other kind's setting leaves the spec (the parser would refuse it).
    kind->setCurrentIndex(0);
    QVERIFY(gain->isHidden());
    QVERIFY(!page.spec()["model"].contains("init_gain"));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));

    // A stored spec of the kind opens with its values.
    page.edit(-1,
              {{"name", "stored"},
               {"model",
                {{"kind", core::test::kDummyModel},
                 {"hidden", nlohmann::json::array()},
                 {"init_gain", 2.0}}}},
              {}, {});
    QCOMPARE(kind->currentText(), QString(core::test::kDummyModel));
    QCOMPARE(gain->value(), 2.0);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
  }

  // The cnn, as a user meets it: refused on vectors next to the kind, its rows on images, and
  // the summary stating its size, cost and what a replica holds as it is edited.
  void theCnnIsEditedWithItsFootprintShown() {
    ui::ExperimentPage page;
    page.edit(-1, {{"name", "images"}, {"cluster", {{"local_nodes", 2}}}}, {}, {});
    auto* kind = qobject_cast<QComboBox*>(page.field("model.kind"));
    auto* channels = page.findChild<QSpinBox*>("channels");
    auto* summary = page.findChild<QLabel*>("summary");
    QVERIFY(kind != nullptr && channels != nullptr && summary != nullptr);
    QVERIFY(channels->isHidden());
    kind->setCurrentIndex(kind->findText("cnn"));
    QVERIFY(!channels->isHidden());
    QCOMPARE(channels->value(), 16);
    // The default dataset is blobs: vectors.
    QCOMPARE(page.errorField(), QString("model.kind"));
    QVERIFY2(page.error().contains("needs images"), qPrintable(page.error()));

    nlohmann::json spec = page.spec();
    spec["dataset"] = {{"kind", "shapes"}};
    page.edit(-1, spec, {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    const auto parameters = [&] {
      return core::modelParameterCount(core::parseExperimentSpec(page.spec()));
    };
    const int64_t before = parameters();
    QVERIFY2(summary->text().contains("CNN 1x28x28 c16-c32 k3 maxpool 128-128-10"),
             qPrintable(summary->text()));
    QVERIFY2(summary->text().contains(QLocale().toString(static_cast<qlonglong>(before)) +
                                      " parameters"),
             qPrintable(summary->text()));
    QVERIFY2(summary->text().contains("MiB of activations at its batch of 64"),
             qPrintable(summary->text()));
    channels->setValue(8);
    QVERIFY(parameters() < before);
    QVERIFY2(summary->text().contains("c8-c16") &&
                 summary->text().contains(QLocale().toString(static_cast<qlonglong>(parameters()))),
             qPrintable(summary->text()));
  }

  // A cnn experiment made, run and compared from the window as a user does it: a shapes
  // dataset and a two-node topology saved to the project, an experiment over them with the cnn
  // chosen and a second variant, run on local daemons, its two runs on the compare page.
  // The sequence kinds are previewed as lines of tokens, inputs over targets, with the floor
  // the language states; the scatter of two features, meaningless for token ids, is hidden.
  void sequenceDatasetsArePreviewedAsTokens() {
    ui::DatasetPage page;
    page.resize(1200, 800);
    page.show();
    QSignalSpy previewed(&page, &ui::DatasetPage::previewShown);
    page.edit(-1, "tokens", {{"kind", "language"}});
    QVERIFY(previewed.wait(20000));
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    const ui::DatasetPreview& p = page.preview();
    QCOMPARE(p.sequences.size(), std::size_t{8});
    QCOMPARE(p.sequences[0].inputs.size(), std::size_t{32});
    QVERIFY(p.lossFloor.has_value());
    // The form calls the classes a vocabulary and the features the tokens of a sample.
    const auto labelled = [&page](const char* text) {
      const QList<QLabel*> labels = page.findChildren<QLabel*>();
      return std::any_of(labels.begin(), labels.end(),
                         [text](const QLabel* l) { return l->text() == text; });
    };
    QVERIFY(labelled("Vocabulary") && labelled("Tokens a sample") && !labelled("Classes"));
    auto* tokens = page.findChild<QLabel*>("tokenPreview");
    QVERIFY(tokens != nullptr && tokens->isVisible() && !page.scatter()->isVisible());
    QVERIFY2(tokens->text().contains(QString::number(*p.lossFloor, 'f', 3) + " nats per token"),
             qPrintable(tokens->text()));
    // The first sample's first input and its target (the next token) as the lines show them.
    const QStringList lines = tokens->text().split('\n');
    const auto first = lines.indexOf(QRegularExpression("^#0 in .*"));
    QVERIFY2(first > 0, qPrintable(tokens->text()));
    const QStringList in = lines[first].mid(7).split(' ', Qt::SkipEmptyParts);
    const QStringList out = lines[first + 1].mid(7).split(' ', Qt::SkipEmptyParts);
    QCOMPARE(in[1], QString::number(static_cast<int>(p.sequences[0].inputs[1])));
    QCOMPARE(out[0], in[1]);
    // copy, reversed: the targets are the inputs last first; no floor above 0 to state.
    page.findChild<QComboBox*>("kind")->setCurrentText("copy");
    QVERIFY(previewed.wait(20000));
    QCOMPARE(page.preview().sequences[0].targets.front(),
             page.preview().sequences[0].inputs.back());
    // Back to a kind of vectors: the scatter again.
    page.findChild<QComboBox*>("kind")->setCurrentText("gaussian_blobs");
    QVERIFY(previewed.wait(20000));
    QVERIFY(!tokens->isVisible() && page.scatter()->isVisible());
    QVERIFY(labelled("Classes") && labelled("Features") && !labelled("Vocabulary"));
  }

  // A cnn on images and a transformer on token sequences, each made, run and compared from the
  // window like any other experiment.
  void anExperimentOfTheKindIsRunAndComparedFromTheWindow_data() {
    QTest::addColumn<QString>("dataset");
    QTest::addColumn<QString>("model");
    QTest::newRow("cnn on shapes") << "shapes"
                                   << "cnn";
    QTest::newRow("transformer on language") << "language"
                                             << "transformer";
  }
  void anExperimentOfTheKindIsRunAndComparedFromTheWindow() {
    QFETCH(QString, dataset);
    QFETCH(QString, model);
    QTemporaryDir dir;
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    QVERIFY(window.newProject(dir.filePath("kind.dtlab")));
    QVERIFY(loaded.count() > 0 || loaded.wait(20000));

    QSignalSpy previewed(window.datasetPage(), &ui::DatasetPage::previewShown);
    window.newDataset();
    QVERIFY(previewed.wait(20000));
    window.datasetPage()->findChild<QComboBox*>("kind")->setCurrentText(dataset);
    QVERIFY(previewed.wait(20000));
    window.datasetPage()->findChild<QSpinBox*>("train_size")->setValue(4096);
    QVERIFY(previewed.wait(20000));
    window.datasetPage()->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().datasets.size(), std::size_t{1},
                              10000);
    window.newTopology();
    window.topologyPage()->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().topologies.size(), std::size_t{1},
                              10000);

    window.newExperiment();
    ui::ExperimentPage* experiment = window.experimentPage();
    qobject_cast<QComboBox*>(experiment->field("dataset"))->setCurrentText("dataset 1");
    qobject_cast<QComboBox*>(experiment->field("cluster"))->setCurrentText("topology 1");
    auto* kind = qobject_cast<QComboBox*>(experiment->field("model.kind"));
    kind->setCurrentIndex(kind->findText(model));
    if (model == "cnn") {
      experiment->findChild<QSpinBox*>("channels")->setValue(4);
      qobject_cast<QLineEdit*>(experiment->field("model.hidden"))->setText("32");
    } else {
      experiment->findChild<QSpinBox*>("width")->setValue(16);
      experiment->findChild<QSpinBox*>("heads")->setValue(2);
    }
    qobject_cast<QSpinBox*>(experiment->field("training.batch_size"))->setValue(64);
    qobject_cast<QSpinBox*>(experiment->field("training.max_steps"))->setValue(80);
    qobject_cast<QSpinBox*>(experiment->field("training.eval_interval"))->setValue(40);
    experiment->variants()->addVariant();
    QVERIFY2(experiment->error().isEmpty(), qPrintable(experiment->error()));
    const core::ExperimentSpec spec = core::parseExperimentSpec(experiment->spec());
    QCOMPARE(spec.model.kind, model.toStdString());
    if (model == "cnn") QCOMPARE(spec.model.hidden, std::vector<int64_t>{32});
    if (model == "transformer")
      QCOMPARE(core::SettingsView(core::modelKindOf(spec.model).parameters, spec.model.parameters)
                   .integer("width"),
               int64_t{16});
    experiment->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().experiments.size(), std::size_t{1},
                              10000);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    experiment->runButton()->click();
    QVERIFY(finished.wait(180000));
    QCOMPARE(runFinished.size(), 2);
    for (const QList<QVariant>& r : runFinished)
      QCOMPARE(r.at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);

    window.showCompare();
    QSignalSpy shown(window.comparePage(), &ui::ComparePage::chartShown);
    window.comparePage()->setChosenRuns({1, 2});
    QVERIFY(shown.wait(20000));
    QVERIFY(window.comparePage()->chart()->graphCount() >= 2);  // a curve per run at least
  }
};

QTEST_MAIN(TestModelKindsGui)
#include "test_model_kinds_gui.moc"
