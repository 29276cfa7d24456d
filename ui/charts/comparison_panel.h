#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <QtWidgets/QFrame>

#include "ui/charts/chart_export.h"
#include "ui/charts/comparison_data.h"
#include "ui/models/compare_layout.h"

class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace dtlab::ui {

class ComparisonChart;

// One comparison chart with its own toolbar: metric, member reduction, x-axis, smoothing, an
// Export menu and a button that removes the chart. It reads its curves itself, on the thread
// pool, from the project and runs it is given (setSource); a change of source or settings
// while a read is on its way supersedes it.
class ComparisonPanel final : public QFrame {
  Q_OBJECT
 public:
  explicit ComparisonPanel(QWidget* parent = nullptr);

  ChartSettings settings() const;
  // Changes only what differs; a change that needs other points re-reads them.
  void setSettings(const ChartSettings& settings);
  void setMetric(const QString& metric);  // a name of the metric table; others are ignored
  void setXAxis(ChartX x);
  void setReduction(MemberReduction reduction);
  void setSmoothing(double weight);  // [0, 1)

  // Where the curves come from; always re-reads (a new snapshot brings new points).
  // `groups`: runs drawn together as a median with a band (a variant's repetitions); empty:
  // one curve per run.
  void setSource(const std::string& path, const std::vector<int64_t>& runIds,
                 const std::vector<RunGroup>& groups = {});
  ComparisonRequest request() const;
  // Whether the chart shows what the settings and source ask for (no read pending).
  bool upToDate() const { return !readScheduled_ && !reading_; }

  ComparisonChart* chart() const { return chart_; }
  void setRemovable(bool removable);
  // Drawn framed in the palette's highlight while it is the chart the page's controls act on.
  void setCurrent(bool current);

 signals:
  void shown();  // after each completed read
  void failed(const QString& message);
  void settingsChanged();  // by the user or a setter, not by setSettings of equal settings
  void activated();        // the user touched the chart or its toolbar
  void removeRequested();
  void exportRequested(ChartFormat format);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void scheduleRead();
  void read();
  void syncReductionChoice();
  void showSmoothing(double weight);

  QComboBox* metric_;
  QComboBox* reduction_;
  QComboBox* xAxis_;
  QSlider* smoothing_;
  QLabel* smoothingValue_;
  QToolButton* export_;
  QToolButton* remove_;
  ComparisonChart* chart_;

  std::string path_;
  std::vector<int64_t> runIds_;
  std::vector<RunGroup> groups_;
  bool readScheduled_ = false;
  bool reading_ = false;
  quint64 request_ = 0;  // of the latest read; older results are dropped
};

}  // namespace dtlab::ui
