#pragma once

#include <QtWidgets/QWidget>

#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/settings.h"
#include "core/store/project_store.h"
#include "ui/pages/edit_state.h"

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace dtlab::ui {

class SettingRows;
class VariantsModel;

// The experiment editor: dataset and cluster (taken from the project's datasets and
// topologies, or as stored), model, optimizer, limits, and the strategy variants to compare.
// Every change is checked by the spec's own parser; its message stands next to the field it
// names, and Save and Run say why they are disabled. Fields the form does not show are kept
// as the stored spec has them.
class ExperimentPage final : public QWidget {
  Q_OBJECT
 public:
  explicit ExperimentPage(QWidget* parent = nullptr);

  // id < 0: a new experiment. datasets / topologies: the project's, to choose from.
  void edit(qint64 id, const nlohmann::json& spec, const std::vector<core::Entity>& datasets,
            const std::vector<core::Entity>& topologies);
  qint64 id() const { return id_; }
  nlohmann::json spec() const { return spec_; }
  QString error() const { return error_; }
  // Whether the form differs from what was loaded or last saved.
  bool isModified() const { return editState_.modified(); }
  // The form as it is becomes the baseline (its changes were saved elsewhere, or the user
  // chose to drop them as the page is left).
  void markUnmodified();
  // Where the error is shown: the field path it names ("optimizer.lr"), or "" (general).
  QString errorField() const { return errorField_; }
  // Whether Run may start (no other run going; the page does not know, the window tells it).
  void setRunBlocked(const QString& why);
  QPushButton* saveButton() const { return save_; }
  QPushButton* runButton() const { return run_; }
  VariantsModel* variants() const { return variants_; }
  // The widget that edits a spec field ("optimizer.lr"), for tests.
  QWidget* field(const QString& path) const;

 signals:
  void saveRequested(qint64 id, const QString& name, const QString& specJson);
  void runRequested(const QString& specJson);
  // The form was checked again (error() may have changed).
  void validated();
  void modifiedChanged(bool modified);

 private:
  // The constructor's parts, in the order it runs them.
  struct VariantButtons {
    QPushButton* add = nullptr;
    QPushButton* remove = nullptr;
  };
  void setUpFields();
  void setUpHelp();
  VariantButtons buildLayout();
  void connectSignals(const VariantButtons& buttons);
  void addRow(QFormLayout* form, const QString& label, const QString& path, QWidget* widget);
  void formChanged();
  void validate();
  void showModelKind(bool resetValues);
  // The chosen model kind's settings (none for a kind this build does not have).
  std::span<const core::SettingSchema> modelSchema() const;

  qint64 id_ = -1;
  bool loading_ = false;
  nlohmann::json spec_ = nlohmann::json::object();
  std::vector<core::Entity> datasets_;
  std::vector<core::Entity> topologies_;
  QString error_;
  QString errorField_;
  QString runBlocked_;

  QLineEdit* name_;
  QSpinBox* seed_;
  QSpinBox* repeats_;  // "repeats": how many times one execution runs every variant
  QComboBox* dataset_;
  QComboBox* topology_;
  QComboBox* modelKind_;  // a registered model kind; its own settings in modelSettings_
  QLineEdit* hidden_;
  QLabel* hiddenLabel_;  // shown, with hidden_, for the kinds that read the hidden widths
  QComboBox* activation_;
  SettingRows* modelSettings_ = nullptr;
  QComboBox* optimizer_;
  QDoubleSpinBox* lr_;
  QDoubleSpinBox* momentum_;
  QSpinBox* batch_;
  QSpinBox* epochs_;
  QSpinBox* maxSteps_;
  QDoubleSpinBox* maxSeconds_;
  QDoubleSpinBox* target_;
  QSpinBox* evalInterval_;
  QSpinBox* checkpointEvery_;  // training.checkpoint_every (0: none)
  QComboBox* dataPartition_;   // training.data_partition.kind
  QComboBox* precision_;       // training.precision
  QDoubleSpinBox* alpha_;      // its Dirichlet concentration
  VariantsModel* variants_;
  QTableView* variantsView_;
  QLabel* summary_;
  QLabel* generalError_;
  QPushButton* save_;
  QPushButton* run_;
  // Field path -> its editor and the label beside it that shows an error about it.
  std::map<QString, std::pair<QWidget*, QLabel*>> fields_;
  EditState editState_;
  QString content() const;  // what EditState compares
};

}  // namespace dtlab::ui
