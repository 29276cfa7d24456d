#pragma once

#include <QtWidgets/QWidget>

#include <nlohmann/json.hpp>

#include "ui/pages/edit_state.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace dtlab::ui {

class TopologyModel;

// The topology editor: the local cluster a run starts (how many dtlab-node daemons, each
// one's emulated speed, bandwidth and latency, CPU threads per node), checked by the spec's
// parser as you type; "Test connection" starts those daemons for real and shows what each
// one's GetInfo answers.
class TopologyPage final : public QWidget {
  Q_OBJECT
 public:
  explicit TopologyPage(QWidget* parent = nullptr);

  // id < 0: a new topology, not yet saved.
  void edit(qint64 id, const QString& name, const nlohmann::json& cluster);
  qint64 id() const { return id_; }
  QString name() const;
  nlohmann::json cluster() const;
  QString error() const;
  // Whether the form differs from what was loaded or last saved.
  bool isModified() const { return editState_.modified(); }
  TopologyModel* model() const { return model_; }
  QPushButton* saveButton() const { return save_; }
  QPushButton* testButton() const { return test_; }
  // Adds `count` local nodes with default settings.
  void addNodes(int count);

 signals:
  void saveRequested(qint64 id, const QString& name, const QString& configJson);
  void connectionTested(bool ok);
  void modifiedChanged(bool modified);

 private:
  void validate();
  void testConnection();

  qint64 id_ = -1;
  bool loading_ = false;
  TopologyModel* model_;
  QLineEdit* name_;
  QSpinBox* threads_;
  QSpinBox* addCount_;
  QTableView* table_;
  QLabel* error_;
  QPushButton* save_;
  QPushButton* test_;
  EditState editState_;
};

}  // namespace dtlab::ui
