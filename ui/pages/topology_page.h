#pragma once

#include <QtWidgets/QWidget>

#include <nlohmann/json.hpp>

#include "ui/controller/experiment_controller.h"
#include "ui/pages/edit_state.h"

class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QComboBox;
class QTableView;

namespace dtlab::ui {

class ExperimentController;
class TopologyModel;

// The topology editor: the cluster a run uses. Local nodes are dtlab-node daemons the run
// starts on this machine (with CPU threads per node); remote nodes are running daemons at an
// address, each with a token kept in the keyring (NodeSecrets; never in the project). Every node
// has its emulated speed, bandwidth and latency (remote daemons apply them per job). Checked
// by the spec's parser as you type; "Test connection" starts the local daemons for real and
// asks each node, local or remote, what its GetInfo answers (a row that cannot be reached,
// or refuses the token, says so on its own row).
class TopologyPage final : public QWidget {
  Q_OBJECT
 public:
  explicit TopologyPage(QWidget* parent = nullptr);
  // Who asks the nodes for "Test connection" (the window's controller; a test's fake). The
  // button stays disabled without one. It must outlive the page's pending checks.
  void setController(ExperimentController* controller);

  // id < 0: a new topology, not yet saved. Resets isModified().
  void edit(qint64 id, const QString& name, const nlohmann::json& cluster);
  qint64 id() const { return id_; }
  QString name() const;
  nlohmann::json cluster() const;
  QString error() const;
  TopologyModel* model() const { return model_; }
  QPushButton* saveButton() const { return save_; }
  QPushButton* testButton() const { return test_; }
  QPushButton* addRemoteButton() const { return addRemote_; }
  // Adds `count` local nodes with default settings.
  void addNodes(int count);
  // Adds a remote node for the daemon at `address` (empty: typed into the table later).
  void addRemoteNode(const QString& address = {});
  // Whether the form differs from what was loaded or last saved: the name, the nodes or the
  // threads (a token is not part of the topology: it goes to NodeSecrets at once).
  bool isModified() const { return editState_.modified(); }
  // The form as it is becomes the baseline (its changes were saved elsewhere, or the user
  // chose to drop them as the page is left).
  void markUnmodified();
  // The token this user keeps for the daemon at `address` ("" when none): what the table's
  // token column edits (node_tokens in ui/models/topology_model.h).
  static QString nodeToken(const QString& address);
  // The client certificate, key and CA this user keeps for the daemon at `address` (all
  // empty: plain text); node_tls in ui/models/topology_model.h.
  static TlsPaths nodeTls(const QString& address);
  // The TLS fields (shown while the topology has remote nodes): what they hold, and setting
  // them as the user would (stored for every remote node at once).
  TlsPaths tls() const;
  void setTls(const TlsPaths& paths);
  QGroupBox* tlsBox() const { return tlsBox_; }
  // Hostfiles (core/spec/hostfile.h), as the Import/Export buttons read and write them.
  // Import replaces the table with the file's daemons, one remote row a line (nothing changes
  // when the file is refused); export writes the remote rows (a table with a local node
  // cannot be written). Both return "" when done, else why not (a bad line: FILE:LINE: ...);
  // an export that left speed schedules or stragglers out (hostfiles have no keys for them)
  // returns "" and says so in *note.
  QString importHostfile(const QString& path);
  QString exportHostfile(const QString& path, QString* note = nullptr) const;
  QPushButton* importButton() const { return import_; }
  QPushButton* exportButton() const { return export_; }

 signals:
  void saveRequested(qint64 id, const QString& name, const QString& configJson);
  // After a test: ok when every node answered.
  void connectionTested(bool ok);
  void modifiedChanged(bool modified);

 private:
  void validate();
  // Stores the TLS fields for every remote node's address (the user's settings); every
  // validate() outside edit() calls it, so the fields hold for rows added after them too.
  void storeTls();
  // Once there is something to tell about where tokens are kept (no keyring: this session
  // only, with the offer of an owner-only file; a refused file), says it in a dialog.
  void tellWhereSecretsGo();
  void testConnection();
  void finishTest(int generation, bool ok);

  qint64 id_ = -1;
  ExperimentController* controller_ = nullptr;
  TopologyModel* model_;
  QLineEdit* name_;
  QSpinBox* threads_;
  QComboBox* device_;  // cluster.device: where the workers train
  QSpinBox* wait_;     // cluster.wait_seconds: how long a run waits for busy nodes
  // A device in the loaded JSON that the combo does not offer: kept, so validation names it,
  // until the user picks one.
  std::string unknownDevice_;
  QSpinBox* addCount_;
  QTableView* table_;
  QLabel* error_;
  QPushButton* save_;
  QPushButton* test_;
  QPushButton* addRemote_;
  QPushButton* import_;
  QPushButton* export_;
  QGroupBox* tlsBox_;
  QLineEdit* tlsCert_;
  QLineEdit* tlsKey_;
  QLineEdit* tlsCa_;
  EditState editState_;
  QString content() const;  // what EditState compares
  bool loading_ = false;    // inside edit(): the widgets' signals are not user edits
  // A test's answers go to the rows they were asked for: an edit() in between makes them
  // stale (its generation is no longer current).
  int testGeneration_ = 0;
  int testsPending_ = 0;
  bool testOk_ = true;
};

}  // namespace dtlab::ui
