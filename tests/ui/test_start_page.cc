// The window with no project open: the start page offers the example specs (here the source
// tree's resources/specs), opens one as a project of its own in the user's documents (the
// example file untouched) with its experiment selected, opens that copy again rather than a
// new one, and lists the project among the recent ones in the next window. A fresh profile:
// HOME and the settings in a temporary folder. Offscreen.
#include <QtTest/QtTest>

#include <algorithm>

#include <QtCore/QCryptographicHash>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QListWidget>
#include <QtWidgets/QStatusBar>

#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_panel.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/predict_page.h"
#include "ui/pages/start_page.h"

using namespace dtlab;

namespace {

QByteArray hashOf(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256);
}

int rowOf(QListWidget* list, const QString& prefix) {
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->text().startsWith(prefix)) return i;
  return -1;
}

// Examples of their own for a tour: `json` as $DTLAB_RESOURCES/specs/`file` (a small stand-in
// under the tour's file name, so that the tour runs in seconds), and a HOME whose documents
// hold no copy yet. Both are put back when it goes.
class TourSetting {
 public:
  TourSetting(const QString& file, const QByteArray& json, const QString& home) : home_(home) {
    QDir(resources_.path()).mkpath("specs");
    QFile spec(QDir(resources_.path()).filePath("specs/" + file));
    written_ = spec.open(QIODevice::WriteOnly) && spec.write(json) == json.size();
    qputenv("DTLAB_RESOURCES", resources_.path().toUtf8());
    qputenv("HOME", documents_.path().toUtf8());
  }
  ~TourSetting() {
    qunsetenv("DTLAB_RESOURCES");
    qputenv("HOME", home_.toUtf8());
  }
  bool written() const { return written_; }
  QString home() const { return documents_.path(); }

 private:
  QTemporaryDir resources_;
  QTemporaryDir documents_;
  QString home_;
  bool written_ = false;
};

// What a tour's window shows, for a failure's message.
QString stateOf(ui::MainWindow& window) {
  QString runs;
  for (const core::RunRecord& r : window.explorerModel()->snapshot().runs)
    runs += QString(" #%1 %2").arg(r.id).arg(core::toString(r.status));
  return QString("page %1, status '%2', predict page: '%3', runs:%4")
      .arg(window.currentPage() != nullptr ? window.currentPage()->metaObject()->className()
                                           : "none",
           window.statusBar()->currentMessage(),
           QString::fromStdString(window.predictPage()->missing()), runs);
}

}  // namespace

class TestStartPage : public QObject {
  Q_OBJECT
  QTemporaryDir home_;

 private slots:
  void initTestCase() {
    QVERIFY(home_.isValid());
    qputenv("HOME", home_.path().toUtf8());
    qputenv("XDG_CONFIG_HOME", home_.filePath(".config").toUtf8());
    qputenv("XDG_DATA_HOME", home_.filePath(".local/share").toUtf8());
    qunsetenv("XDG_DOCUMENTS_DIR");
  }

  void aFreshWindowOffersTheExamples() {
    ui::MainWindow window;
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.startPage()));
    QListWidget* examples = window.startPage()->examples();
    const int row = rowOf(examples, "modes_straggler: 6 variants on 4 nodes");
    QVERIFY2(row >= 0, qPrintable(examples->count() > 0 ? examples->item(0)->text() : "none"));
    QVERIFY(examples->item(row)->toolTip().contains("Variant"));
    QCOMPARE(window.startPage()->recent()->count(), 0);
  }

  void anExampleOpensAsAProjectOfItsOwn() {
    const QString spec = QStringLiteral(DTLAB_SOURCE_DIR "/resources/specs/modes_straggler.json");
    const QByteArray before = hashOf(spec);
    const QString copy = QDir(home_.path()).filePath("Documents/DTLab/modes_straggler.dtlab");
    {
      ui::MainWindow window;
      QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
      QListWidget* examples = window.startPage()->examples();
      emit examples->itemActivated(examples->item(rowOf(examples, "modes_straggler")));
      QVERIFY(loaded.wait(20000));
      QCOMPARE(loaded.first().first().toString(), copy);
      QCOMPARE(window.explorerModel()->snapshot().experiments.size(), std::size_t{1});
      QCOMPARE(window.explorerModel()->snapshot().experiments[0].name,
               std::string("modes_straggler"));
      // Its experiment is selected, ready to run.
      QTRY_VERIFY_WITH_TIMEOUT(qobject_cast<ui::ExperimentPage*>(window.currentPage()) != nullptr,
                               10000);
    }
    QCOMPARE(hashOf(spec), before);  // the example itself only read
    QVERIFY(QFileInfo(copy).isFile());
    {  // Again: the same copy, not a new one; and the next window lists it as recent.
      ui::MainWindow window;
      QListWidget* recent = window.startPage()->recent();
      QCOMPARE(recent->count(), 1);
      QCOMPARE(recent->item(0)->text(), copy);
      QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
      QListWidget* examples = window.startPage()->examples();
      emit examples->itemActivated(examples->item(rowOf(examples, "modes_straggler")));
      QVERIFY(loaded.wait(20000));
      QCOMPARE(window.explorerModel()->snapshot().experiments.size(), std::size_t{1});
    }
    QCOMPARE(QDir(QDir(home_.path()).filePath("Documents/DTLab")).entryList({"*.dtlab"}).size(), 1);
  }

  // A guided tour opens its example, runs it on local nodes and lands on its comparison. The
  // example here is a small stand-in under the tour's file name ($DTLAB_RESOURCES/specs), so
  // that the tour runs in seconds.
  void aTourRunsItsExampleAndShowsTheComparison() {
    const TourSetting tour("modes_straggler.json", R"({"name": "tour_modes", "seed": 3,
      "dataset": {"kind": "gaussian_blobs", "train_size": 2048, "test_size": 256,
                  "features": 8, "classes": 3},
      "model": {"hidden": [16]},
      "training": {"batch_size": 32, "epochs": 0, "max_steps": 30, "eval_interval": 10},
      "cluster": {"local_nodes": 2},
      "variants": [{"name": "sync", "strategy": "sync_allreduce"},
                   {"name": "async", "strategy": "async_ps"}]})",
                           home_.path());
    QVERIFY(tour.written());
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1280, 800);
    window.show();
    QListWidget* list = window.startPage()->tourList();
    QCOMPARE(list->count(), 1);  // hetero_2node.json is not in this folder: its tour is not offered
    QCOMPARE(list->item(0)->text(), QString("Compare sync and async under a straggler"));
    emit list->itemActivated(list->item(0));
    QTRY_VERIFY2_WITH_TIMEOUT(window.currentPage() == static_cast<QWidget*>(window.comparePage()),
                              qPrintable(stateOf(window)), 60000);
    const ui::ProjectSnapshot& s = window.explorerModel()->snapshot();
    QCOMPARE(s.runs.size(), std::size_t{2});
    for (const core::RunRecord& r : s.runs) QCOMPARE(r.status, core::RunStatus::kCompleted);
    QCOMPARE(window.comparePage()->execution(), std::optional<int64_t>(s.executions.back().id));
    // And the comparison is drawn: a curve per variant on the current chart.
    QTRY_VERIFY2_WITH_TIMEOUT(
        window.comparePage()->panel(window.comparePage()->currentChart())->chart()->graphCount() >=
            2,
        qPrintable(stateOf(window)), 30000);
    QVERIFY(
        QFileInfo(QDir(tour.home()).filePath("Documents/DTLab/modes_straggler.dtlab")).isFile());
    if (const QByteArray shot = qgetenv("DTLAB_TOUR_SCREENSHOT"); !shot.isEmpty())
      window.grab().save(QString::fromUtf8(shot));
  }

  // "What if I had 64 nodes?": the tour runs its example's 1- and 2-node variants, calibrates
  // the simulator from those runs and lands on the Predict page at 2 to 64 nodes. A small
  // stand-in under the tour's file name, as above.
  void theScaleTourLandsOnAPredictionUpToSixtyFourNodes() {
    const TourSetting tour("scale_out.json", R"({"name": "tour_scale", "seed": 3,
      "dataset": {"kind": "gaussian_blobs", "train_size": 4096, "test_size": 256,
                  "features": 8, "classes": 3},
      "model": {"hidden": [32]},
      "training": {"batch_size": 128, "epochs": 0, "max_steps": 40, "eval_interval": 1000},
      "cluster": {"local_nodes": 2, "nodes": [{"bandwidth_mbps": 1000}]},
      "variants": [{"name": "one_node", "strategy": "sync_allreduce", "nodes": 1},
                   {"name": "sync", "strategy": "sync_allreduce"},
                   {"name": "ps", "strategy": "async_ps"}]})",
                           home_.path());
    QVERIFY(tour.written());
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1400, 860);
    window.show();
    QListWidget* list = window.startPage()->tourList();
    const int row = rowOf(list, "What if I had 64 nodes?");
    QVERIFY(row >= 0);
    QVERIFY(list->item(row)->toolTip().contains("calibrated"));
    emit list->itemActivated(list->item(row));
    ui::PredictPage* predict = window.predictPage();
    QTRY_VERIFY2_WITH_TIMEOUT(
        window.currentPage() == static_cast<QWidget*>(predict) && !predict->predictions().empty(),
        qPrintable(stateOf(window)), 60000);
    QCOMPARE(predict->experiment(), std::string("tour_scale"));
    QVERIFY2(predict->missing().empty(), predict->missing().c_str());
    const ui::ProjectSnapshot& s = window.explorerModel()->snapshot();
    QCOMPARE(s.runs.size(), std::size_t{3});
    // Each strategy predicted at the tour's node counts, from a calibration of the runs it made.
    QCOMPARE(predict->predictions().size(), std::size_t{2});  // one_node folds into sync
    for (const core::VariantPrediction& v : predict->predictions()) {
      std::vector<int> nodes;
      for (const core::ScalePoint& p : v.points) nodes.push_back(p.nodes);
      for (int n : {2, 4, 8, 16, 32, 64})  // and the measured runs' own counts beside them
        QVERIFY2(std::find(nodes.begin(), nodes.end(), n) != nodes.end(),
                 (v.variant + ": no prediction at " + std::to_string(n) + " nodes").c_str());
      QCOMPARE(nodes.back(), 64);
    }
    QVERIFY(window.statusBar()->currentMessage().contains("calibrated from the runs it made"));
    if (const QByteArray shot = qgetenv("DTLAB_SCALE_TOUR_SCREENSHOT"); !shot.isEmpty())
      window.grab().save(QString::fromUtf8(shot));
  }
};

QTEST_MAIN(TestStartPage)
#include "test_start_page.moc"
