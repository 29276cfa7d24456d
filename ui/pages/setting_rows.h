#pragma once
// The rows of a form for the settings a registry's kinds declare (a dataset kind's parameters,
// a model kind's settings): one editor per key (and type) any kind declares, each row shown
// while the chosen kind declares it and its condition holds, with that kind's label, range and
// help. The dataset page and the experiment page's model both edit their kinds with it, so a
// kind added to a registry gets its rows with no change to either page.
#include <QtCore/QObject>
#include <QtCore/QString>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/settings.h"

class QFormLayout;
class QWidget;

namespace dtlab::ui {

class SettingRows final : public QObject {
 public:
  using Schema = std::span<const core::SettingSchema>;
  // Adds a row to `form` for each key (and type) that `kinds` declare, in their order; each
  // editor's object name is its key. `changed` runs on every edit of one.
  SettingRows(QWidget* parent, QFormLayout* form, const std::vector<Schema>& kinds,
              std::function<void()> changed);

  // The rows of `kind` with its labels, ranges and help (and, with resetValues, its defaults);
  // `reference`: the kind's entry in the documentation (ui/help/context_help.h), which each
  // row's tooltip names and F1 on it opens.
  void show(Schema kind, bool resetValues, const QString& reference = {});
  // Rows whose setting applies only while another holds some value: shown only then.
  void updateVisibility(Schema kind);
  // The values the editors of `kind` hold.
  core::SettingValues values(Schema kind) const;
  // The editors of `kind` take the values `object` gives (JSON as the spec has them).
  void load(const nlohmann::json& object, Schema kind);
  // The values of `kind` that apply, into `object` under their keys.
  void write(nlohmann::json& object, Schema kind) const;
  QWidget* editor(const std::string& key) const;

 private:
  struct Field {
    std::string key;
    core::SettingType type;
    QWidget* editor;
  };
  const core::SettingSchema* schemaOf(const Field& field, Schema kind) const;
  static void setEditorValue(QWidget* editor, const core::SettingValue& value);
  static nlohmann::json editorValue(const QWidget* editor);

  QFormLayout* form_;
  std::vector<Field> fields_;
};

}  // namespace dtlab::ui
