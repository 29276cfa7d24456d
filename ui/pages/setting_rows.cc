#include "ui/pages/setting_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QSpinBox>

#include "ui/help/context_help.h"

namespace dtlab::ui {
namespace {

int clampedInt(double v) {
  return static_cast<int>(std::clamp(v, double{std::numeric_limits<int>::min()},
                                     double{std::numeric_limits<int>::max()}));
}

// The editor of one setting: a spin box for integers and reals, a list for choices.
QWidget* makeEditor(QWidget* parent, const core::SettingSchema& s) {
  switch (s.type) {
    case core::SettingType::kInteger: {
      auto* box = new QSpinBox(parent);
      box->setRange(clampedInt(s.min), clampedInt(s.max));
      if (!s.zeroMeans.empty()) {  // 0 stands for a word ("4 x width"), shown as that word
        box->setMinimum(0);
        box->setSpecialValueText(QString::fromStdString(s.zeroMeans));
      }
      box->setValue(0);
      box->setGroupSeparatorShown(true);
      return box;
    }
    case core::SettingType::kReal: {
      auto* box = new QDoubleSpinBox(parent);
      box->setDecimals(3);
      box->setSingleStep(0.1);
      return box;
    }
    case core::SettingType::kChoice:
      return new QComboBox(parent);
  }
  return nullptr;
}

}  // namespace

SettingRows::SettingRows(QWidget* parent, QFormLayout* form, const std::vector<Schema>& kinds,
                         std::function<void()> changed)
    : QObject(parent), form_(form) {
  for (Schema kind : kinds) {
    for (const core::SettingSchema& s : kind) {
      const bool known = std::any_of(fields_.begin(), fields_.end(), [&](const Field& f) {
        return f.key == s.key && f.type == s.type;
      });
      if (known) continue;
      Field field{s.key, s.type, makeEditor(parent, s)};
      field.editor->setObjectName(QString::fromStdString(s.key));
      form_->addRow(QString::fromStdString(s.label), field.editor);
      fields_.push_back(field);
    }
  }
  for (const Field& field : fields_) {
    if (auto* box = qobject_cast<QSpinBox*>(field.editor))
      connect(box, &QSpinBox::valueChanged, this, [changed] { changed(); });
    else if (auto* real = qobject_cast<QDoubleSpinBox*>(field.editor))
      connect(real, &QDoubleSpinBox::valueChanged, this, [changed] { changed(); });
    else if (auto* list = qobject_cast<QComboBox*>(field.editor))
      connect(list, &QComboBox::currentIndexChanged, this, [changed] { changed(); });
  }
}

const core::SettingSchema* SettingRows::schemaOf(const Field& field, Schema kind) const {
  const core::SettingSchema* s = core::findSetting(kind, field.key);
  return s != nullptr && s->type == field.type ? s : nullptr;
}

void SettingRows::show(Schema kind, bool resetValues, const QString& reference) {
  for (const Field& field : fields_) {
    const core::SettingSchema* s = schemaOf(field, kind);
    form_->setRowVisible(field.editor, s != nullptr);
    if (s == nullptr) continue;
    const QSignalBlocker block(field.editor);
    if (auto* label = qobject_cast<QLabel*>(form_->labelForField(field.editor)))
      label->setText(QString::fromStdString(s->label));
    setReferenceTip(field.editor, QString::fromStdString(s->help + " (" + s->rangeText() + ")"),
                    reference);
    if (auto* real = qobject_cast<QDoubleSpinBox*>(field.editor))
      real->setRange(s->min, std::isinf(s->max) ? 1e9 : s->max);
    if (auto* list = qobject_cast<QComboBox*>(field.editor)) {
      list->clear();
      for (const std::string& choice : s->choices) list->addItem(QString::fromStdString(choice));
    }
    if (resetValues) setEditorValue(field.editor, s->defaultValue);
  }
}

void SettingRows::updateVisibility(Schema kind) {
  const core::SettingValues current = values(kind);
  const core::SettingsView view(kind, current);
  for (const Field& field : fields_)
    form_->setRowVisible(field.editor, schemaOf(field, kind) != nullptr && view.applies(field.key));
}

void SettingRows::setEditorValue(QWidget* editor, const core::SettingValue& value) {
  if (auto* box = qobject_cast<QSpinBox*>(editor)) {
    if (const auto* i = std::get_if<int64_t>(&value)) box->setValue(clampedInt(double(*i)));
  } else if (auto* real = qobject_cast<QDoubleSpinBox*>(editor)) {
    if (const auto* d = std::get_if<double>(&value)) real->setValue(*d);
  } else if (auto* list = qobject_cast<QComboBox*>(editor)) {
    if (const auto* text = std::get_if<std::string>(&value))
      list->setCurrentText(QString::fromStdString(*text));
  }
}

nlohmann::json SettingRows::editorValue(const QWidget* editor) {
  if (const auto* box = qobject_cast<const QSpinBox*>(editor)) return box->value();
  if (const auto* real = qobject_cast<const QDoubleSpinBox*>(editor)) return real->value();
  if (const auto* list = qobject_cast<const QComboBox*>(editor))
    return list->currentText().toStdString();
  return nullptr;
}

core::SettingValues SettingRows::values(Schema kind) const {
  core::SettingValues out;
  for (const Field& field : fields_) {
    if (schemaOf(field, kind) == nullptr) continue;
    const nlohmann::json v = editorValue(field.editor);
    if (v.is_number_integer())
      out.set(field.key, v.get<int64_t>());
    else if (v.is_number())
      out.set(field.key, v.get<double>());
    else if (v.is_string())
      out.set(field.key, v.get<std::string>());
  }
  return out;
}

void SettingRows::load(const nlohmann::json& object, Schema kind) {
  for (const Field& field : fields_) {
    const core::SettingSchema* schema = schemaOf(field, kind);
    if (schema == nullptr || !object.is_object()) continue;
    if (!object.contains(field.key)) {  // as it reads: its default (a word's 0 is left out)
      setEditorValue(field.editor, schema->defaultValue);
      continue;
    }
    const nlohmann::json& v = object[field.key];
    if (v.is_number_integer()) setEditorValue(field.editor, v.get<int64_t>());
    if (v.is_number()) setEditorValue(field.editor, v.get<double>());
    if (v.is_string()) setEditorValue(field.editor, v.get<std::string>());
  }
}

void SettingRows::write(nlohmann::json& object, Schema kind) const {
  const core::SettingValues current = values(kind);
  const core::SettingsView view(kind, current);
  for (const Field& field : fields_) {
    const core::SettingSchema* schema = schemaOf(field, kind);
    if (schema == nullptr || !view.applies(field.key)) continue;
    const nlohmann::json value = editorValue(field.editor);
    if (!schema->zeroMeans.empty() && value == 0) continue;  // as the spec writes it
    object[field.key] = value;
  }
}

QWidget* SettingRows::editor(const std::string& key) const {
  for (const Field& field : fields_)
    if (field.key == key) return field.editor;
  return nullptr;
}

}  // namespace dtlab::ui
