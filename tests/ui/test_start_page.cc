// The window with no project open: the start page offers the example specs (here the source
// tree's resources/specs), opens one as a project of its own in the user's documents (the
// example file untouched) with its experiment selected, opens that copy again rather than a
// new one, and lists the project among the recent ones in the next window. A fresh profile:
// HOME and the settings in a temporary folder. Offscreen.
#include <QtTest/QtTest>

#include <QtCore/QCryptographicHash>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QListWidget>

#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/experiment_page.h"
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
    QTemporaryDir resources;
    QVERIFY(QDir(resources.path()).mkpath("specs"));
    QFile spec(QDir(resources.path()).filePath("specs/modes_straggler.json"));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write(R"({"name": "tour_modes", "seed": 3,
      "dataset": {"kind": "gaussian_blobs", "train_size": 2048, "test_size": 256,
                  "features": 8, "classes": 3},
      "model": {"hidden": [16]},
      "training": {"batch_size": 32, "epochs": 0, "max_steps": 30, "eval_interval": 10},
      "cluster": {"local_nodes": 2},
      "variants": [{"name": "sync", "strategy": "sync_allreduce"},
                   {"name": "async", "strategy": "async_ps"}]})");
    spec.close();
    qputenv("DTLAB_RESOURCES", resources.path().toUtf8());
    QTemporaryDir home;  // documents of their own: the earlier case made the real example's copy
    qputenv("HOME", home.path().toUtf8());
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1280, 800);
    window.show();
    QListWidget* list = window.startPage()->tourList();
    QCOMPARE(list->count(), 1);  // hetero_2node.json is not in this folder: its tour is not offered
    QCOMPARE(list->item(0)->text(), QString("Compare sync and async under a straggler"));
    emit list->itemActivated(list->item(0));
    QTRY_VERIFY_WITH_TIMEOUT(window.currentPage() == static_cast<QWidget*>(window.comparePage()),
                             120000);
    qunsetenv("DTLAB_RESOURCES");
    const ui::ProjectSnapshot& s = window.explorerModel()->snapshot();
    QCOMPARE(s.runs.size(), std::size_t{2});
    for (const core::RunRecord& r : s.runs) QCOMPARE(r.status, core::RunStatus::kCompleted);
    QCOMPARE(window.comparePage()->execution(), std::optional<int64_t>(s.executions.back().id));
    QVERIFY(
        QFileInfo(QDir(home.path()).filePath("Documents/DTLab/modes_straggler.dtlab")).isFile());
    qputenv("HOME", home_.path().toUtf8());
    if (const QByteArray shot = qgetenv("DTLAB_TOUR_SCREENSHOT"); !shot.isEmpty())
      window.grab().save(QString::fromUtf8(shot));
  }
};

QTEST_MAIN(TestStartPage)
#include "test_start_page.moc"
