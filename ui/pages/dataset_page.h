#pragma once

#include <QtWidgets/QWidget>

#include <nlohmann/json.hpp>

#include "core/spec/settings.h"
#include "ui/models/dataset_preview.h"
#include "ui/pages/edit_state.h"

class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QFormLayout;
class QLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace dtlab::core {
struct DatasetKindDescriptor;
}

namespace dtlab::ui {

class SettingRows;

// The dataset editor: the fields of a synthetic dataset (the kinds and their parameters as the
// registry describes them, core/data/dataset_kinds.h), checked as you type by the spec's
// own parser (its message shown next to the form), and a live preview computed by the real
// generators off the GUI thread: a scatter of the first two features (2-D datasets are the
// data itself), sample images for `shapes`, token lines for sequence kinds, and the class
// histogram of every worker's shard for the chosen partition.
class DatasetPage final : public QWidget {
  Q_OBJECT
 public:
  explicit DatasetPage(QWidget* parent = nullptr);

  // Loads a dataset (name and its "dataset" JSON); id < 0: a new one, not yet saved.
  void edit(qint64 id, const QString& name, const nlohmann::json& config);
  nlohmann::json config() const;  // the form as the spec's "dataset" object
  QString name() const;
  qint64 id() const { return id_; }
  // The last preview drawn (tests) and the error shown ("" when valid).
  const DatasetPreview& preview() const { return preview_; }
  QString error() const;
  // The field the error names ("dataset.train_size"; "" for none, or one the form does not
  // show): its editor is marked, by the SpecError's path rather than its message.
  QString errorField() const { return errorField_; }
  // Whether the form differs from what was loaded or last saved.
  bool isModified() const { return editState_.modified(); }
  // The form as it is becomes the baseline (its changes were saved elsewhere, or the user
  // chose to drop them as the page is left).
  void markUnmodified();
  QPushButton* saveButton() const { return save_; }
  QSpinBox* workersBox() const { return workers_; }
  QCustomPlot* scatter() const { return scatter_; }
  QCustomPlot* histogram() const { return histogram_; }

 signals:
  // Save was pressed on a valid form: store it as dataset `name` (id < 0: create).
  void saveRequested(qint64 id, const QString& name, const QString& configJson);
  void previewShown();
  void modifiedChanged(bool modified);

 private:
  QWidget* buildFields();
  QWidget* buildShardForm();
  QLayout* buildPreview();
  void connectFields();
  // The chosen kind; its rows shown with its labels, ranges and help (and, with resetValues,
  // its defaults).
  const core::DatasetKindDescriptor& kind() const;
  void showKind(bool resetValues);
  void changed();
  void computePreview();
  void showPreview(const DatasetPreview& preview);
  // The form's problem ("" when none) beside it, and Save enabled or saying why not.
  void showError(QString problem);
  // Marks the editor of the spec field at `path` (and unmarks the one marked before).
  void markField(const std::string& path);

  qint64 id_ = -1;
  QString errorField_;
  QWidget* marked_ = nullptr;  // the editor markField() marked
  bool loading_ = false;
  quint64 request_ = 0;
  QLineEdit* name_;
  QComboBox* kind_;
  QLabel* summary_;
  QSpinBox* trainSize_;
  QSpinBox* testSize_;
  QSpinBox* classes_;
  QSpinBox* features_;
  QSpinBox* seed_;
  QSpinBox* workers_;
  QComboBox* partition_;
  QDoubleSpinBox* alpha_;
  QLabel* error_;
  QLabel* images_;
  QLabel* tokens_;  // sequence kinds: the first samples' tokens
  QLabel* shardNote_;
  QPushButton* save_;
  QCustomPlot* scatter_;
  QCustomPlot* histogram_;
  QTimer* debounce_;
  QFormLayout* form_ = nullptr;
  SettingRows* parameters_ = nullptr;  // the kinds' parameters
  DatasetPreview preview_;
  EditState editState_;
  QString content() const;  // what EditState compares
};

}  // namespace dtlab::ui
