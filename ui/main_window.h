#pragma once

#include <QtCore/QDateTime>
#include <QtWidgets/QMainWindow>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ui/models/project_snapshot.h"

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QTimer;
class QTreeView;

namespace dtlab::ui {

class ComparePage;
class PredictPage;
class DatasetPage;
class ExperimentPage;
class TopologyPage;
class ExperimentController;
class ExplorerModel;
class RunPage;
class StartPage;
class UserGuide;
struct RunProgress;

// The workbench window: the project explorer beside the page of what is selected. Project
// reads happen on a thread pool and arrive as values (ProjectSnapshot, RunDetail); the GUI
// thread never waits on the file. The open project is re-read when its file changes, so runs
// that another process (`dtlab-cli run --project`) records appear as they happen.
class MainWindow final : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens (reads in the background) and emits projectLoaded, or loadFailed with the reason.
  void openProject(const QString& path);
  // Opens the example spec `specPath` as a project of its own in the user's documents
  // (exampleProjectsDir(), made the first time, with the spec as its experiment, which is
  // then selected), or the copy made before.
  void openExample(const QString& specPath);
  // A guided tour: opens the example, runs its experiment on local nodes and, when the run
  // ends, shows its comparison (the status bar says how far it has come).
  void startTour(const QString& specPath, const QString& title);
  StartPage* startPage() const { return startPage_; }
  // Creates a new, empty project file and opens it; false (with a message) if it cannot.
  bool newProject(const QString& path);
  // Writes a copy of the open project to `path` (replacing a file there only when `replace`)
  // and opens the copy; unsaved edits in the editor on screen go into the copy, the original
  // stays as it was. Refused while a run records into the project. Emits projectLoaded for
  // the copy, or loadFailed with the reason.
  void saveProjectAs(const QString& path, bool replace = false);
  // Saves the editor on screen (File > Save); false with a message when there is nothing to
  // save or the form is invalid.
  bool saveCurrent();
  // The dataset, topology or experiment editor on screen when it has unsaved changes.
  bool editorModified() const;
  // Selects a run in the explorer and shows its page (emits runShown when it is drawn).
  void selectRun(qint64 runId);
  // Shows the comparison of the project's runs (View > Compare runs).
  void showCompare();
  // Errors go to the status bar only (screenshots, tests) instead of a message box.
  void setQuietErrors(bool quiet) { quietErrors_ = quiet; }
  // Runs every variant of the selected experiment on its local cluster (recorded into the
  // project), or cancels the running one. The actions say why they are disabled.
  QAction* runAction() const { return runAction_; }
  QAction* cancelAction() const { return cancelAction_; }
  QAction* resumeAction() const { return resumeAction_; }
  ExperimentController* controller() const { return controller_; }
  // Resumes a run of the project, with the spec it ran, from its newest checkpoint or the one
  // of `step` (Run > Resume Run; the answer to resumeOffered). False when it cannot start.
  bool resumeRun(qint64 runId, qint64 step = 0);

  QString projectPath() const { return path_; }
  ExplorerModel* explorerModel() const { return explorer_; }
  QTreeView* explorerView() const { return tree_; }
  RunPage* runPage() const { return runPage_; }
  ExperimentPage* experimentPage() const { return experimentPage_; }
  DatasetPage* datasetPage() const { return datasetPage_; }
  TopologyPage* topologyPage() const { return topologyPage_; }
  // Opens the dataset / topology editor on a new one (saved by the page's Save button).
  void newDataset();
  void newTopology();
  void newExperiment();
  // Shows the project's first dataset, topology or experiment in its editor, or a new one.
  void showFirst(const QString& kind);
  ComparePage* comparePage() const { return comparePage_; }
  // Shows the Predict page (View > Predict at Scale) for experiment `experiment`, else the
  // experiment selected (or that of the run or execution selected), else the most recent.
  // calibrate: fit a new calibration from the experiment's runs first.
  void showPredict(const std::string& experiment = {}, bool calibrate = false);
  PredictPage* predictPage() const { return predictPage_; }
  QWidget* currentPage() const;
  // File > Export Report: the report (ui/report/report_export.h) of the execution in view: the
  // compare page's, else that of the run or the latest of the experiment selected, else the
  // project's most recent, written to `path` (.html or .pdf). Errors say what and where (a
  // message box, or the status bar when quiet); false then.
  bool exportReport(const QString& path);
  // What exportReport reports: an experiment's name and an execution, either may be absent.
  std::pair<std::optional<std::string>, std::optional<int64_t>> reportTarget() const;
  // Help > User Guide (F1): the documentation's page `page` in its window (one per main window).
  UserGuide* showUserGuide(const QString& page = QStringLiteral("README.md"));

 signals:
  void projectLoaded(const QString& path);
  // Each time the project has been read and shown (the first time, projectLoaded as well).
  void projectRead(const QString& path);
  void loadFailed(const QString& message);
  void runShown(qint64 runId);
  // A resume was refused for a damaged checkpoint while the one of `step` verifies; outside
  // quiet mode the window asks whether to resume from it.
  void resumeOffered(qint64 runId, qint64 step, const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void chooseReportFile();  // File > Export Report...: asks where, then exportReport
  void connectController();
  void reload();
  void applySnapshot(const ProjectSnapshot& snapshot);
  void showOverview(const ProjectSnapshot& snapshot);
  void showSelection();
  void loadRun(qint64 runId);
  void pollFile();
  void fail(const QString& message);
  void rememberRecent(const QString& path);
  void refreshRecentMenu();
  void showAbout();
  void updateRunActions();
  void runSelectedExperiment();
  // resumeRunId: not 0 to resume that run (RunRequest::resumeRunId, resumeStep) with the spec
  // it ran.
  bool runSpec(const QString& specJson, qint64 resumeRunId = 0, qint64 resumeStep = 0);
  // The run a guided tour started has ended: its comparison, once the project is read again.
  void landTour();
  // The run selected in the explorer when it can be resumed (failed, cancelled or
  // interrupted), else null.
  const core::RunRecord* resumableRun() const;
  void onProgress(const RunProgress& progress);
  // reshow: the editor goes on showing the saved entity (false when the user is leaving it).
  void saveEntity(const QString& kind, qint64 id, const QString& name, const QString& configJson,
                  bool reshow = true);
  // Before something replaces the editor on screen: when it has unsaved changes, asks whether
  // to save them (in the background; at once with saveNow, as the window closes), discard
  // them or stay. False: stay.
  bool maySwitchAway(bool saveNow = false);
  // What the editor on screen holds: its kind ("" when no editor is on screen), id, name, JSON.
  struct EditorContent {
    QString kind;
    qint64 id = -1;
    QString name;
    QString json;
    QString error;  // the form's validation message, "" when it may be saved
  };
  EditorContent editorContent() const;
  void updateModifiedMark();

  ExplorerModel* explorer_;
  QTreeView* tree_;
  QStackedWidget* pages_;
  QLabel* welcome_;
  ExperimentPage* experimentPage_;
  DatasetPage* datasetPage_;
  TopologyPage* topologyPage_;
  RunPage* runPage_;
  ComparePage* comparePage_;
  PredictPage* predictPage_;
  QMenu* recentMenu_ = nullptr;
  QTimer* poll_;
  QLabel* statusProject_;
  ExperimentController* controller_;
  QAction* runAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* resumeAction_ = nullptr;
  QProgressBar* runProgress_;
  qint64 followRun_ = -1;
  qint64 liveRun_ = -1;
  QString runningSpec_;  // the JSON of the experiment the controller runs  // the run the
                         // controller is executing (its page grows live)
  QTimer* liveTimer_;  // coalesces live points into one replot every ~40 ms  // a run started from
                       // here: selected as soon as it is listed

  QString path_;
  quint64 generation_ = 0;  // of the open project; stale reads are dropped
  quint64 runRequest_ = 0;  // of the run page
  qint64 shownRun_ = -1;
  QString pendingKind_;  // re-selected after a reload
  qint64 pendingId_ = -1;
  QDateTime seenModified_;  // the file's and its WAL's last change, for pollFile
  qint64 seenWalSize_ = -1;
  bool quietErrors_ = false;
  // A resume the controller offered (damagedCheckpoint), asked once the request has ended.
  struct OfferedResume {
    qint64 runId = 0;
    qint64 step = 0;
    QString message;
  };
  std::optional<OfferedResume> offeredResume_;
  bool switching_ = false;  // a switch away from a modified editor was already agreed to
  bool reverting_ = false;  // the explorer is put back on the editor's entry (the user stayed)
  bool asking_ = false;     // the unsaved-changes question is open (reloads go on meanwhile)
  QAction* saveAsAction_ = nullptr;
  QAction* exportReportAction_ = nullptr;
  UserGuide* userGuide_ = nullptr;
  StartPage* startPage_ = nullptr;
  QString tour_;                    // the tour under way ("" when none)
  bool tourRunning_ = false;        // its run was started
  std::vector<int> tourPredictAt_;  // Tour::predictAt of the tour under way
  std::string tourExperiment_;      // the experiment it runs
};

}  // namespace dtlab::ui
