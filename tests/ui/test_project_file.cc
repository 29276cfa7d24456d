// Saving in the workbench, driven through the real window offscreen: File > Save writes the
// editor on screen, Save Project As writes a whole copy (with the unsaved edits, the original
// left as it was), and leaving or closing an editor with unsaved changes asks first; the
// message boxes are answered by clicking their buttons.
#include <QtTest/QtTest>

#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QApplication>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeView>

#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;

namespace {

// A project with a dataset, a topology, an experiment and one recorded run.
std::string makeProject(const QTemporaryDir& dir, const char* name = "p.dtlab") {
  const std::string path = dir.filePath(name).toStdString();
  auto store = core::ProjectStore::create(path, "saving");
  store->putEntity(core::EntityKind::kDataset, "blobs",
                   {{"kind", "gaussian_blobs"}, {"train_size", 2048}, {"test_size", 256}});
  store->putEntity(core::EntityKind::kTopology, "two nodes", {{"local_nodes", 2}});
  core::ExperimentSpec spec = ui_test::smallSpec("exp", 20);
  store->putEntity(core::EntityKind::kExperiment, spec.name, core::toJson(spec));
  ui_test::recordRun(*store, spec);
  return path;
}

nlohmann::json storedDataset(const std::string& path) {
  return core::ProjectStore::open(path, true)->entities(core::EntityKind::kDataset).at(0).config;
}

// Clicks `button` of the next message box that opens (as a user would), and keeps its text.
class Answer {
 public:
  explicit Answer(QMessageBox::StandardButton button) {
    timer_.setInterval(10);
    QObject::connect(&timer_, &QTimer::timeout, [this, button] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (box == nullptr) return;
      timer_.stop();
      text_ = box->text() + "\n" + box->informativeText();
      saveEnabled_ =
          box->button(QMessageBox::Save) != nullptr && box->button(QMessageBox::Save)->isEnabled();
      box->button(button)->click();
    });
    timer_.start();
  }
  bool asked() const { return !text_.isEmpty(); }
  QString text() const { return text_; }
  bool saveEnabled() const { return saveEnabled_; }

 private:
  QTimer timer_;
  QString text_;
  bool saveEnabled_ = false;
};

bool open(ui::MainWindow& window, const std::string& path) {
  window.setQuietErrors(true);
  QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
  window.openProject(QString::fromStdString(path));
  return loaded.wait(20000);
}

void select(ui::MainWindow& window, const char* kind, qint64 id) {
  window.explorerView()->setCurrentIndex(window.explorerModel()->find(kind, id));
}

}  // namespace

class TestProjectFile : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void saveWritesTheEditorOnScreen() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    QVERIFY(open(window, path));
    // Nothing to save on the overview: said in the status bar, nothing written.
    QVERIFY(!window.saveCurrent());
    QVERIFY(window.statusBar()->currentMessage().contains("Nothing to save"));

    select(window, "experiment", 1);
    ui::ExperimentPage* page = window.experimentPage();
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));
    QVERIFY(!page->isModified());
    QVERIFY(!window.isWindowModified());
    auto* lr = qobject_cast<QDoubleSpinBox*>(page->field("optimizer.lr"));
    QVERIFY(lr != nullptr);
    const double before = lr->value();
    lr->setValue(before * 2);
    QVERIFY(page->isModified());
    QVERIFY(window.isWindowModified());  // the title's [*]
    lr->setValue(before);                // typed back as it was: nothing to save
    QVERIFY(!page->isModified());
    QVERIFY(!window.isWindowModified());
    lr->setValue(0.125);
    QVERIFY(window.saveCurrent());
    QTRY_COMPARE_WITH_TIMEOUT(core::ProjectStore::open(path, true)
                                  ->entities(core::EntityKind::kExperiment)
                                  .at(0)
                                  .config["optimizer"]["lr"]
                                  .get<double>(),
                              0.125, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!page->isModified(), 10000);
    QVERIFY(!window.isWindowModified());

    // An invalid form is not saved; the message says why.
    QSignalSpy failed(&window, &ui::MainWindow::loadFailed);
    page->findChild<QLineEdit*>("name")->setText("");
    QVERIFY(!window.saveCurrent());
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed.first().first().toString().contains("name"),
             qPrintable(failed.first().first().toString()));
  }

  void leavingAModifiedEditorAsks() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    QVERIFY(open(window, path));
    select(window, "dataset", 1);
    ui::DatasetPage* dataset = window.datasetPage();
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(dataset));
    dataset->findChild<QSpinBox*>("train_size")->setValue(3000);
    QVERIFY(dataset->isModified());

    {  // Cancel: the editor stays, with its edit, and the explorer goes back to it.
      Answer cancel(QMessageBox::Cancel);
      select(window, "topology", 1);
      QVERIFY(cancel.asked());
      QVERIFY2(cancel.text().contains("dataset \"blobs\" has unsaved changes"),
               qPrintable(cancel.text()));
      QCOMPARE(window.currentPage(), static_cast<QWidget*>(dataset));
      QCOMPARE(window.explorerView()->currentIndex(), window.explorerModel()->find("dataset", 1));
      QCOMPARE(dataset->findChild<QSpinBox*>("train_size")->value(), 3000);
      QCOMPARE(storedDataset(path)["train_size"], nlohmann::json(2048));
    }
    {  // Save: the topology is shown and the dataset's edit reaches the file.
      Answer save(QMessageBox::Save);
      select(window, "topology", 1);
      QVERIFY(save.asked());
      QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.topologyPage()));
      QTRY_COMPARE_WITH_TIMEOUT(storedDataset(path)["train_size"], nlohmann::json(3000), 10000);
    }
    // The topology editor asks too; Discard leaves the file as it was.
    window.topologyPage()->findChild<QSpinBox*>("threads_per_node")->setValue(3);
    QVERIFY(window.topologyPage()->isModified());
    {
      Answer discard(QMessageBox::Discard);
      window.selectRun(1);
      QVERIFY(discard.asked());
      // Answered once: while the run's page is read the editor is still on screen, and a
      // reload meanwhile (the file changed) must not ask again.
      QVERIFY(!window.topologyPage()->isModified());
      QVERIFY(!window.isWindowModified());
      QVERIFY(waitForRun(window));
    }
    const auto topology =
        core::ProjectStore::open(path, true)->entities(core::EntityKind::kTopology).at(0);
    QVERIFY(!topology.config.contains("threads_per_node") ||
            topology.config["threads_per_node"] == nlohmann::json(1));
    // Going back shows what is stored, unmodified.
    select(window, "topology", 1);
    QCOMPARE(window.topologyPage()->findChild<QSpinBox*>("threads_per_node")->value(), 1);
    QVERIFY(!window.topologyPage()->isModified());

    // An edit that cannot be saved: Save is offered disabled, with the reason.
    select(window, "dataset", 1);
    dataset->findChild<QSpinBox*>("classes")->setValue(1);
    QVERIFY(dataset->isModified());
    Answer stay(QMessageBox::Cancel);
    window.newExperiment();
    QVERIFY(stay.asked());
    QVERIFY(!stay.saveEnabled());
    QVERIFY2(stay.text().contains("dataset.classes"), qPrintable(stay.text()));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(dataset));
  }

  void closingWithUnsavedEditsAsksAndSavesAtOnce() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    QVERIFY(open(window, path));
    window.show();
    select(window, "dataset", 1);
    window.datasetPage()->findChild<QLineEdit*>("name")->setText("renamed blobs");
    {
      Answer cancel(QMessageBox::Cancel);
      QVERIFY(!window.close());
      QVERIFY(cancel.asked());
      QVERIFY(window.isVisible());
    }
    Answer save(QMessageBox::Save);
    QVERIFY(window.close());
    QVERIFY(save.asked());
    // Written before close() returned: there is no later moment once the window is gone.
    QCOMPARE(core::ProjectStore::open(path, true)->entities(core::EntityKind::kDataset).at(0).name,
             std::string("renamed blobs"));
  }

  void saveAsCopiesTheProjectWithTheEditsAndLeavesTheOriginal() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    const std::string copy = dir.filePath("copy.dtlab").toStdString();
    ui::MainWindow window;
    QVERIFY(open(window, path));
    select(window, "dataset", 1);
    window.datasetPage()->findChild<QSpinBox*>("train_size")->setValue(4096);

    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    window.saveProjectAs(QString::fromStdString(copy));
    QVERIFY(loaded.wait(20000));
    QCOMPARE(loaded.first().first().toString(), QString::fromStdString(copy));
    QCOMPARE(window.projectPath(), QString::fromStdString(copy));
    QTRY_COMPARE_WITH_TIMEOUT(storedDataset(copy)["train_size"], nlohmann::json(4096), 10000);
    QCOMPARE(storedDataset(path)["train_size"], nlohmann::json(2048));  // as it was saved
    // The copy is the whole project: the run with its points.
    auto copied = core::ProjectStore::open(copy, true);
    QCOMPARE(copied->runs().size(), std::size_t{1});
    QVERIFY(!copied->series(copied->runs().front().id).empty());
    QCOMPARE(copied->entities(core::EntityKind::kExperiment).size(), std::size_t{1});
    // The editor goes on showing the dataset, now the copy's, saved.
    QTRY_COMPARE_WITH_TIMEOUT(window.currentPage(), static_cast<QWidget*>(window.datasetPage()),
                              10000);
    QTRY_VERIFY_WITH_TIMEOUT(!window.datasetPage()->isModified(), 10000);

    // Refused: the project's own file, an existing file not to be replaced.
    QSignalSpy failed(&window, &ui::MainWindow::loadFailed);
    window.saveProjectAs(QString::fromStdString(copy));
    QVERIFY(failed.wait(10000));
    QVERIFY2(failed.last().first().toString().contains("own file"),
             qPrintable(failed.last().first().toString()));
    window.saveProjectAs(QString::fromStdString(path));
    QVERIFY(failed.wait(10000));
    QVERIFY2(failed.last().first().toString().contains("already exists"),
             qPrintable(failed.last().first().toString()));
    QCOMPARE(window.projectPath(), QString::fromStdString(copy));
    QCOMPARE(storedDataset(path)["train_size"], nlohmann::json(2048));
  }

 private:
  static bool waitForRun(ui::MainWindow& window) {
    QSignalSpy shown(&window, &ui::MainWindow::runShown);
    return !shown.isEmpty() || shown.wait(20000);
  }
};

QTEST_MAIN(TestProjectFile)
#include "test_project_file.moc"
