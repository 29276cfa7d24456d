#include "ui/pages/entity_page.h"

#include <QtGui/QFontDatabase>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QVBoxLayout>

namespace dtlab::ui {

EntityPage::EntityPage(QWidget* parent)
    : QWidget(parent), title_(new QLabel(this)), json_(new QPlainTextEdit(this)) {
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title_->setFont(big);
  json_->setReadOnly(true);
  json_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(json_, 1);
}

void EntityPage::showEntity(const QString& kind, const core::Entity& entity) {
  title_->setText(QString("%1: %2").arg(kind.left(1).toUpper() + kind.mid(1),
                                        QString::fromStdString(entity.name)));
  json_->setPlainText(QString::fromStdString(entity.config.dump(2)));
}

QString EntityPage::text() const {
  return json_->toPlainText();
}

}  // namespace dtlab::ui
