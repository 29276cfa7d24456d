// MainWindow's saving: the editors' unsaved changes (the question before they are lost),
// File > Save and Save Project As. Part of main_window.cc's class, kept apart for size.
#include "ui/main_window.h"

#include <QtCore/QFileInfo>
#include <QtCore/QScopedValueRollback>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>

#include "core/store/project_store.h"
#include "ui/background.h"
#include "ui/controller/experiment_controller.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_access.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

namespace dtlab::ui {
namespace {

core::EntityKind entityKindOf(const QString& kind) {
  return kind == "dataset"    ? core::EntityKind::kDataset
         : kind == "topology" ? core::EntityKind::kTopology
                              : core::EntityKind::kExperiment;
}

// Creates (id < 0) or updates an entity; returns its id.
qint64 storeEntity(core::ProjectStore& store, core::EntityKind kind, qint64 id,
                   const std::string& name, const std::string& json) {
  const nlohmann::json config = nlohmann::json::parse(json);
  if (id < 0) return static_cast<qint64>(store.createEntity(kind, name, config));
  store.updateEntity(kind, id, name, config);
  return id;
}

}  // namespace

void MainWindow::saveEntity(const QString& kind, qint64 id, const QString& name,
                            const QString& configJson, bool reshow) {
  const std::string path = path_.toStdString();
  const std::string entityName = name.toStdString();
  const std::string json = configJson.toStdString();
  const core::EntityKind entityKind = entityKindOf(kind);
  writeProject<qint64>(
      this, path,
      [=](core::ProjectStore& store) {
        return storeEntity(store, entityKind, id, entityName, json);
      },
      [this, kind, name, configJson, reshow](const std::optional<qint64>& saved,
                                             const QString& error) {
        if (!saved) {
          fail(tr("Cannot save %1 %2: %3").arg(kind, name, error));
          return;
        }
        statusBar()->showMessage(tr("Saved %1 %2").arg(kind, name), 4000);
        if (!reshow) {  // the user has moved on: the explorer lists it at the next read
          reload();
          return;
        }
        const nlohmann::json config = nlohmann::json::parse(configJson.toStdString());
        const ProjectSnapshot& s = explorer_->snapshot();
        if (kind == "dataset") {
          datasetPage_->edit(*saved, name, config);
        } else if (kind == "topology") {
          topologyPage_->edit(*saved, name, config);
        } else {
          experimentPage_->edit(*saved, config, s.datasets, s.topologies);
        }
        pendingKind_ = kind;
        pendingId_ = *saved;
        reload();
      });
}

MainWindow::EditorContent MainWindow::editorContent() const {
  const QWidget* page = pages_->currentWidget();
  const auto dump = [](const nlohmann::json& j) { return QString::fromStdString(j.dump()); };
  if (page == datasetPage_)
    return {"dataset", datasetPage_->id(), datasetPage_->name(), dump(datasetPage_->config()),
            datasetPage_->error()};
  if (page == topologyPage_)
    return {"topology", topologyPage_->id(), topologyPage_->name(), dump(topologyPage_->cluster()),
            topologyPage_->error()};
  if (page == experimentPage_) {
    const nlohmann::json spec = experimentPage_->spec();
    const nlohmann::json name = spec.value("name", nlohmann::json());
    return {"experiment", experimentPage_->id(),
            name.is_string() ? QString::fromStdString(name.get<std::string>()) : QString(),
            dump(spec), experimentPage_->error()};
  }
  return {};
}

bool MainWindow::editorModified() const {
  const QWidget* page = pages_->currentWidget();
  return (page == datasetPage_ && datasetPage_->isModified()) ||
         (page == topologyPage_ && topologyPage_->isModified()) ||
         (page == experimentPage_ && experimentPage_->isModified());
}

void MainWindow::updateModifiedMark() {
  setWindowModified(editorModified());
}

bool MainWindow::maySwitchAway(bool saveNow) {
  if (switching_ || !editorModified()) return true;
  const EditorContent e = editorContent();
  QMessageBox box(QMessageBox::Warning, tr("DTLab"),
                  tr("The %1 \"%2\" has unsaved changes.").arg(e.kind, e.name),
                  QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  if (e.error.isEmpty()) {
    box.setInformativeText(tr("Save them in the project?"));
    box.setDefaultButton(QMessageBox::Save);
  } else {
    box.setInformativeText(tr("They cannot be saved as they are: %1").arg(e.error));
    box.button(QMessageBox::Save)->setEnabled(false);
    box.setDefaultButton(QMessageBox::Cancel);
  }
  int answer = QMessageBox::Cancel;
  {
    const QScopedValueRollback asking(asking_, true);
    answer = box.exec();
  }
  if (answer != QMessageBox::Save && answer != QMessageBox::Discard)
    return false;  // Cancel, Escape, the close button
  // Asked once: the page may stay on screen a moment longer (a run's page is read first), and
  // a reload meanwhile must not ask again.
  const auto settled = [this] {
    if (datasetPage_ == pages_->currentWidget()) datasetPage_->markUnmodified();
    if (topologyPage_ == pages_->currentWidget()) topologyPage_->markUnmodified();
    if (experimentPage_ == pages_->currentWidget()) experimentPage_->markUnmodified();
    return true;
  };
  if (answer == QMessageBox::Discard) return settled();
  if (!saveNow) {
    saveEntity(e.kind, e.id, e.name, e.json, /*reshow=*/false);
    return settled();
  }
  // The window is closing: there is no later moment to report a failure, so write now (a row).
  try {
    writeProjectNow<qint64>(path_.toStdString(), [&](core::ProjectStore& store) {
      return storeEntity(store, entityKindOf(e.kind), e.id, e.name.toStdString(),
                         e.json.toStdString());
    });
  } catch (const std::exception& error) {
    fail(tr("Cannot save %1 %2: %3").arg(e.kind, e.name, QString::fromUtf8(error.what())));
    return false;
  }
  return settled();
}

bool MainWindow::saveCurrent() {
  const EditorContent e = editorContent();
  if (e.kind.isEmpty()) {
    statusBar()->showMessage(tr("Nothing to save here: runs are recorded in the project as they "
                                "happen; datasets, topologies and experiments are saved from "
                                "their editors."),
                             8000);
    return false;
  }
  if (!e.error.isEmpty()) {
    fail(tr("Cannot save the %1: %2").arg(e.kind, e.error));
    return false;
  }
  saveEntity(e.kind, e.id, e.name, e.json);
  return true;
}

void MainWindow::saveProjectAs(const QString& path, bool replace) {
  if (path_.isEmpty()) {
    fail(tr("Open a project first."));
    return;
  }
  if (controller_->busy()) {
    fail(tr("A run is being recorded into %1: save a copy when it has finished.").arg(path_));
    return;
  }
  // Unsaved edits belong to the copy (the original stays as it was saved).
  const EditorContent pending = editorModified() ? editorContent() : EditorContent{};
  if (!pending.error.isEmpty()) {
    fail(tr("Cannot save the project as %1: the %2 being edited is invalid: %3")
             .arg(path, pending.kind, pending.error));
    return;
  }
  const QString target = QFileInfo(path).absoluteFilePath();
  const std::string from = path_.toStdString();
  const std::string to = target.toStdString();
  const QString selectedKind = pendingKind_;
  const qint64 selectedId = pendingId_;
  statusBar()->showMessage(tr("Saving a copy as %1...").arg(target));
  readProject<bool>(
      this, from,
      [to, replace](core::ProjectStore& store) {
        store.saveCopyAs(to, replace);
        return true;
      },
      [this, target, pending, selectedKind, selectedId](const std::optional<bool>& done,
                                                        const QString& error) {
        if (!done) {
          fail(tr("Cannot save the project as %1: %2").arg(target, error));
          return;
        }
        openProject(target);
        pendingKind_ = selectedKind;  // the same entry, now in the copy
        pendingId_ = selectedId;
        if (!pending.kind.isEmpty())
          saveEntity(pending.kind, pending.id, pending.name, pending.json);
        statusBar()->showMessage(tr("Saved the project as %1").arg(target), 6000);
      });
}

}  // namespace dtlab::ui
