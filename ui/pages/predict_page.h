#pragma once

#include <QtWidgets/QWidget>

#include <optional>
#include <string>
#include <vector>

#include "core/sim/calibration.h"
#include "core/sim/topology.h"
#include "core/train/scale_prediction.h"

class QCheckBox;
class QSpinBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace dtlab::ui {

// The Predict page (issue 24): an experiment's variants at node counts the cluster at hand
// cannot run, simulated with the project's newest calibration of the experiment
// (core/train/scale_prediction.h): the chosen figure against node count per variant, on
// logarithmic axes, with the band the calibration's spread gives and the measured runs drawn
// on the same axes; a table of every figure, and beside it what the calibration could not
// separate and the convergence model each time to target assumes. "Calibrate" fits a new
// calibration from the experiment's runs (as `dtlab-cli calibrate` does) and predicts again.
// Project reads and the simulation run in the background.
class PredictPage final : public QWidget {
  Q_OBJECT
 public:
  // What the chart plots against node count.
  enum class Figure { kStepMs, kSamplesPerS, kUtilization, kStaleness, kTimeToTarget };

  explicit PredictPage(QWidget* parent = nullptr);

  // Predicts experiment `experiment` (empty: the project's most recent) of the project at
  // `path`; emits shown() when it is on the page, failed() when it cannot be read.
  // calibrateFirst: fit a new calibration from the experiment's runs first (as calibrate()).
  void showExperiment(const std::string& path, const std::string& experiment = {},
                      bool calibrateFirst = false);
  // Fits a calibration from the experiment's runs, stores it in the project, then predicts.
  void calibrate();
  void setNodes(const std::vector<int>& nodes);
  void setFigure(Figure figure);
  // Nodes to a host sharing its cores (as `predict --nodes-per-host`); 0: as the calibrated
  // runs were placed (the spec's cluster size on one host, or a host each). Predicts again.
  void setNodesPerHost(int nodes);
  // Predicts for the cluster a topology file describes (core/sim/topology.h) instead of the
  // spec's, and predicts again; an empty path goes back to the spec's. Returns what is wrong
  // with the file ("" when it was taken).
  QString setTopologyFile(const QString& path);
  const std::optional<core::sim::Topology>& topology() const { return topology_; }

  const std::string& experiment() const { return experiment_; }
  const std::vector<core::VariantPrediction>& predictions() const { return predictions_; }
  const std::vector<core::MeasuredPoint>& measured() const { return measured_; }
  // Why there is no prediction (no calibration yet, ...); empty when there is one.
  const std::string& missing() const { return missing_; }
  QCustomPlot* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }
  // Where the shown prediction placed its nodes (core::hostAssumption).
  const std::string& hosts() const { return hosts_; }

 signals:
  void shown();
  void failed(const QString& message);

 private:
  struct Outcome;
  void start(bool calibrateFirst);
  void take(const Outcome& outcome);
  void draw();
  void fillTable();
  std::vector<int> nodesAsked(QString* error) const;

  std::string path_;
  std::string experiment_;
  std::optional<int64_t> calibrationId_;
  core::sim::Calibration calibration_;
  std::vector<core::VariantPrediction> predictions_;
  std::vector<core::MeasuredPoint> measured_;
  std::vector<int> nodes_ = {16, 64, 256, 1024, 4096};
  std::string missing_;
  std::optional<core::sim::Topology> topology_;
  std::string onTopology_;  // the shown prediction's topology, described ("" the spec's)
  std::string hosts_;       // where the shown prediction placed its nodes (core::hostAssumption)
  bool busy_ = false;

  QLabel* title_;
  QLineEdit* nodesEdit_;
  QComboBox* figure_;
  QCheckBox* throughputOnly_;
  QSpinBox* nodesPerHost_;
  QPushButton* predictButton_;
  QPushButton* calibrateButton_;
  QPushButton* topologyButton_;
  QLabel* topologyLabel_;
  QCustomPlot* chart_;
  QTableWidget* table_;
  QTextBrowser* notes_;
};

}  // namespace dtlab::ui
