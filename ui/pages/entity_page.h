#pragma once

#include <QtWidgets/QWidget>

#include "core/store/project_store.h"

class QLabel;
class QPlainTextEdit;

namespace dtlab::ui {

// A dataset, topology or experiment of the project: its name and its JSON configuration
// exactly as stored (what `dtlab-cli run` would be given).
class EntityPage final : public QWidget {
  Q_OBJECT
 public:
  explicit EntityPage(QWidget* parent = nullptr);
  void showEntity(const QString& kind, const core::Entity& entity);
  QString text() const;

 private:
  QLabel* title_;
  QPlainTextEdit* json_;
};

}  // namespace dtlab::ui
