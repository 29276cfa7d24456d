#pragma once

#include <QtWidgets/QWidget>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ui/charts/run_dashboard.h"
#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"

class QCheckBox;
class QComboBox;
class QDialog;
class QPushButton;
class QLabel;
class QSplitter;
class QTableView;
class QPlainTextEdit;

namespace dtlab::ui {

class RunMetricsModel;

// One run: what it was (strategy, status, error, summary figures), its dashboard (loss and
// test accuracy, throughput, step-time breakdown, utilisation and a metric of the user's
// choice, against steps, seconds or the time of day), every metric's last / min / max, and
// its events (one wrapped line each, the whole event in its tooltip). The layout of charts,
// table and events is remembered (QSettings), as is "Follow the running run".
class RunPage final : public QWidget {
  Q_OBJECT
 public:
  explicit RunPage(QWidget* parent = nullptr);
  void showRun(const RunDetail& detail);
  // Appends points measured since (a run being executed from this window): the charts grow
  // without re-reading the store, one replot for the batch, and the metric table's rows move
  // as the store's will (RunMetricsModel::addPoints). Points of a series up to the step the
  // store had when the run was shown came with it: they are skipped. In-memory series are
  // bounded; history comes from the store.
  void appendLive(const std::vector<LivePoint>& points);
  qint64 runId() const { return runId_; }
  // The status of the run when it was shown.
  core::RunStatus runStatus() const { return status_; }
  // "Follow the running run": when a run executed from this window starts (the next variant),
  // the window shows it; off, a run on screen stays there. Remembered in QSettings.
  bool followsRunningRun() const;
  void setFollowsRunningRun(bool follow);
  // Remembers the splitters' positions (QSettings; the window calls it as it closes).
  void saveLayout() const;
  // The tooltip of the events list at a point of its viewport: the whole event there.
  QString eventToolTip(const QPoint& viewportPos) const;
  // Every chart's x-axis: steps, seconds since the run started, or the time of day.
  void setXAxis(RunXAxis axis);
  // The last chart's metric (a row name of the metric table).
  void chooseMetric(const QString& key);
  // Hides or shows a series (a graph of chart(), by index), as a click on its legend entry does.
  void toggleSeries(int graph);
  // The crosshair's text on `chart` at x (every visible series' value there); "" outside the
  // data.
  QString valuesAt(double x, RunDashboard::Chart chart = RunDashboard::kLossChart) const;
  static constexpr int kMaxLivePoints = RunDashboard::kMaxLivePoints;

  // "Replay to here" (the charts' context menu, on a run its record replays: async_ps, ssp,
  // hybrid): replays the run from its project in the background to the server after global
  // step `step`, then shows the update applied there (its worker, staleness, the test loss
  // before and after it), the pushes in flight and the weights' checksum, with a button that
  // saves the weights. replayShown() says when the text is there.
  void replayTo(qint64 step);
  // The replay's window (null before the first replay) and its text.
  QDialog* replayDialog() const { return replayDialog_; }
  QString replayText() const;
  // Writes the last replay's weights (float32, little-endian) to `path`; false when there are
  // none or the file cannot be written.
  bool saveReplayWeights(const QString& path) const;

 signals:
  void replayShown(const QString& text);

 public:
  // For tests: the charts (one QCustomPlot), the metrics model, the metric chooser, the
  // events list, the follow toggle, the splitters (charts | lower, metrics | events).
  RunDashboard* chart() const { return dashboard_; }
  RunMetricsModel* metricsModel() const { return metrics_; }
  QComboBox* metricChooser() const { return metricChoice_; }
  QPlainTextEdit* eventsView() const { return events_; }
  QCheckBox* followToggle() const { return follow_; }
  QSplitter* splitter() const { return split_; }
  QSplitter* lowerSplitter() const { return lower_; }
  QString headline() const;
  QString chartNote() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QLabel* title_;
  QLabel* facts_;
  QLabel* chartNote_;
  RunDashboard* dashboard_;
  RunMetricsModel* metrics_;
  QTableView* metricsView_;
  QPlainTextEdit* events_;
  QComboBox* xAxis_;
  QComboBox* metricChoice_;
  QCheckBox* follow_;
  QSplitter* split_;
  QSplitter* lower_;
  qint64 runId_ = -1;
  std::string projectPath_;
  QDialog* replayDialog_ = nullptr;
  QPlainTextEdit* replayView_ = nullptr;
  QPushButton* saveWeights_ = nullptr;
  std::vector<float> replayWeights_;
  void showReplay(const QString& title, const QString& text);
  core::RunStatus status_ = core::RunStatus::kRunning;
  // Per series (metric table row, owner: worker, node or -1) the last step the store had
  // when the run was shown; live points up to it are already counted. Dropped once a live
  // point passes it.
  std::map<std::pair<int, int>, qint64> storedUpTo_;
  void updateNote();
  void updateChooser();
  void appendEvents(const std::vector<core::RunEvent>& events, std::size_t from);
};

}  // namespace dtlab::ui
