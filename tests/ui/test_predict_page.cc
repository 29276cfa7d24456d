// The Predict page (issue 24) in the real window, offscreen, on runs of real daemons
// (dtlab-cli run): without a calibration it says how to make one; "Calibrate from Runs" fits
// one from the experiment's runs and stores it in the project, then every variant is drawn
// against node count (a baseline on one node folded into its configuration), with its measured
// runs on the same axes and a row per node count in the table; another figure redraws the
// chart; a topology file predicts for a tree of switches; a node count that is not one and a
// topology that says something wrong are refused with what is wrong.
#include <QtTest/QtTest>

#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableWidget>

#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "core/store/project_store.h"
#include "tests/core/scale_spec.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/statistics_table_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/execution_statistics.h"
#include "ui/pages/predict_page.h"

using namespace dtlab;

namespace {

const std::string kSpec = core::test::scaleSpec(nlohmann::json::parse(R"([
    {"name": "sync", "strategy": "sync_allreduce"},
    {"name": "sync_one", "strategy": "sync_allreduce", "nodes": 1},
    {"name": "ps", "strategy": "async_ps"}])"));

}  // namespace

class TestPredictPage : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString project_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    project_ = dir_.filePath("scale.dtlab");
    const QString spec = dir_.filePath("scale.json");
    QFile file(spec);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(kSpec));
    file.close();
    QProcess cli;
    cli.start(DTLAB_BINARY_DIR "/app/dtlab-cli", {"run", spec, "--quiet", "--project", project_});
    QVERIFY(cli.waitForFinished(180000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
  }

  void calibratesAndPredicts() {
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1300, 850);
    window.show();
    window.openProject(project_);
    QVERIFY(QSignalSpy(&window, &ui::MainWindow::projectLoaded).wait(20000));
    ui::PredictPage* page = window.predictPage();

    // No calibration yet: the page says how to make one, and draws nothing.
    QSignalSpy shown(page, &ui::PredictPage::shown);
    window.showPredict();
    QCOMPARE(window.currentPage(), page);
    QVERIFY(shown.wait(30000));
    QCOMPARE(page->experiment(), std::string("scale"));
    QVERIFY(page->missing().find("No calibration of this experiment yet") != std::string::npos);
    QVERIFY(page->predictions().empty());
    QCOMPARE(page->measured().size(), std::size_t{3});

    // Calibrate: stored in the project, then every configuration predicted.
    page->setNodes({4, 16, 64});
    page->calibrate();
    QVERIFY(shown.wait(60000));
    QVERIFY2(page->missing().empty(), page->missing().c_str());
    QVERIFY(core::ProjectStore::open(project_.toStdString(), true)->latestCalibration());
    const std::vector<core::VariantPrediction>& p = page->predictions();
    QCOMPARE(p.size(), std::size_t{2});  // sync (with its one-node baseline) and ps
    QCOMPARE(p[0].variant, std::string("sync"));
    QCOMPARE(p[0].aliases, std::vector<std::string>{"sync_one"});
    // A row per variant and node count asked for; the runs' node counts are predicted too.
    QCOMPARE(page->table()->rowCount(), 6);
    QCOMPARE(page->table()->item(0, 2)->text(), QString("4"));
    QVERIFY(page->table()->item(0, 3)->text().toDouble() > 0.0);
    // The Shared column: the stretch of nodes sharing their host's cores (the project's runs
    // were all on this machine, so 2 nodes to a host of its cores).
    QCOMPARE(page->table()->horizontalHeaderItem(8)->text(), QString("Shared"));
    QVERIFY2(page->table()->item(0, 8)->text().startsWith("x"),
             qPrintable(page->table()->item(0, 8)->text()));
    // On the chart: per variant a band, its line and its runs; one legend entry for the runs.
    QCustomPlot* chart = page->chart();
    QCOMPARE(chart->graphCount(), 2 * 4 + 1);
    QCOMPARE(chart->yAxis->label(), QString("Time per step (ms)"));
    int measuredPoints = 0;
    for (int g = 0; g < chart->graphCount(); ++g)
      if (chart->graph(g)->lineStyle() == QCPGraph::lsNone)
        measuredPoints += chart->graph(g)->dataCount();
    QCOMPARE(measuredPoints, 3);  // sync on 2 nodes and on 1, ps on 2

    page->setFigure(ui::PredictPage::Figure::kStaleness);
    QCOMPARE(chart->yAxis->label(), QString("Mean staleness (pushes)"));
    QCOMPARE(chart->yAxis->scaleType(), QCPAxis::stLinear);

    // A tree of switches with 8:1 uplinks: the synchronous step on 64 nodes grows, and the
    // runs (on the spec's cluster) are no longer drawn. A bad file is refused, naming the field.
    page->setFigure(ui::PredictPage::Figure::kStepMs);
    const double flat = p[0].points.back().stepMs;
    const QString tree = dir_.filePath("tree.json");
    QFile file(tree);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"levels": [{"fanout": 4, "oversubscription": 8}, {"fanout": 16}]})");
    file.close();
    QVERIFY(page->setTopologyFile(tree).isEmpty());
    QVERIFY(shown.wait(60000));
    QVERIFY(page->topology());
    QVERIFY2(
        page->predictions()[0].points.back().stepMs > flat,
        qPrintable(QString("%1 vs %2").arg(page->predictions()[0].points.back().stepMs).arg(flat)));
    int drawnRuns = 0;
    for (int g = 0; g < chart->graphCount(); ++g)
      if (chart->graph(g)->lineStyle() == QCPGraph::lsNone)
        drawnRuns += chart->graph(g)->dataCount();
    QCOMPARE(drawnRuns, 0);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(R"({"levels": [{"fanout": 0}]})");
    file.close();
    QVERIFY(page->setTopologyFile(tree).contains("tree.json.levels[0].fanout"));
    QVERIFY(page->setTopologyFile({}).isEmpty());  // back to the spec's cluster
    QVERIFY(shown.wait(60000));
    QVERIFY(!page->topology());
    QVERIFY2(page->hosts().find("2 nodes to a host of") == 0, page->hosts().c_str());

    // Nodes per host: 1 places each node on a machine of its own, sharing nothing.
    page->setNodesPerHost(1);
    QVERIFY(shown.wait(60000));
    QCOMPARE(page->hosts(), std::string("each node a host of its own"));
    for (const core::VariantPrediction& v : page->predictions())
      for (const core::ScalePoint& point : v.points) QCOMPARE(point.hostStretch, 1.0);
    page->setNodesPerHost(0);
    QVERIFY(shown.wait(60000));

    // The compare page sets the simulator beside each run of the execution: its Yardstick tab.
    const std::vector<core::ExecutionRecord>& executions =
        window.explorerModel()->snapshot().executions;
    QCOMPARE(executions.size(), std::size_t{1});
    window.showCompare();
    ui::ExecutionStatistics* statistics = window.comparePage()->statistics();
    QSignalSpy statisticsShown(statistics, &ui::ExecutionStatistics::shown);
    QVERIFY(window.comparePage()->showExecution(executions[0].id));
    QVERIFY(statisticsShown.wait(30000));
    QCOMPARE(statistics->yardstick()->rowCount(), 3);
    QCOMPARE(window.comparePage()->tabs()->tabText(3), QString("Yardstick"));
    window.showPredict();
    QVERIFY(shown.wait(60000));

    // A node count that is not one: refused, naming it.
    QSignalSpy failed(page, &ui::PredictPage::failed);
    page->findChild<QLineEdit*>()->setText("16,lots");
    for (QPushButton* button : page->findChildren<QPushButton*>())
      if (button->text() == "Predict") button->click();
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("'lots' is not a node count"));
  }
};

QTEST_MAIN(TestPredictPage)
#include "test_predict_page.moc"
