#include "ui/help/context_help.h"

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QHash>
#include <QtCore/QPointer>
#include <QtCore/QRegularExpression>
#include <QtGui/QAction>
#include <QtGui/QKeyEvent>
#include <QtWidgets/QAbstractItemView>
#include <QtWidgets/QWidget>

#include "ui/help/user_guide.h"

namespace dtlab::ui {
namespace {

constexpr const char* kProperty = "dtlabReferenceEntry";

QString tr(const char* text) {
  return QCoreApplication::translate("dtlab::ui::ContextHelp", text);
}

// F1 at a field that names an entry: the focus widget takes the key before the window's
// shortcut sees it (ShortcutOverride accepted), and its key press opens the guide there.
// Any other F1 is left to the window's Help > User Guide.
class F1Filter final : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::ShortcutOverride && event->type() != QEvent::KeyPress)
      return false;
    auto* key = static_cast<QKeyEvent*>(event);
    if (!key->matches(QKeySequence::HelpContents)) return false;
    // The focus widget's key, first (then its parents', which have an entry only when it has).
    auto* widget = qobject_cast<QWidget*>(watched);
    const QString target = widget != nullptr ? referenceEntryAt(widget) : QString();
    if (target.isEmpty()) return false;
    key->accept();
    if (event->type() == QEvent::KeyPress) openGuideAt(widget, target);
    return true;
  }
};

void installF1Handling() {
  static QPointer<F1Filter> filter;
  if (filter != nullptr || QCoreApplication::instance() == nullptr) return;
  filter = new F1Filter(QCoreApplication::instance());
  QCoreApplication::instance()->installEventFilter(filter);
}

// A page's title and its headings by anchor, as its Markdown has them (empty when the page is
// not there). A paragraph's bold opening counts as a heading. Each page is read once.
struct PageNames {
  QString title;
  QHash<QString, QString> headings;  // anchor -> the heading's text
};

const PageNames& namesOf(const QString& page) {
  static QHash<QString, PageNames> pages;
  const QString dir = documentationDir();
  const QString key = dir + '\n' + page;
  if (const auto it = pages.constFind(key); it != pages.constEnd()) return *it;
  PageNames names;
  QFile file(dir.isEmpty() ? QString() : QDir(dir).filePath(page));
  if (file.open(QIODevice::ReadOnly | QIODevice::Text)) {
    static const QRegularExpression kHeading(R"(^(#{1,6})\s+(.+?)\s*#*\s*$)");
    static const QRegularExpression kRunIn(R"(^\*\*(.+?)\*\*)");
    bool fenced = false;
    for (const QString& line : QString::fromUtf8(file.readAll()).split('\n')) {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced) continue;
      QRegularExpressionMatch m = kHeading.match(line);
      QString text;
      if (m.hasMatch()) {
        text = m.captured(2);
        if (names.title.isEmpty() && m.captured(1).size() == 1) names.title = text;
      } else if ((m = kRunIn.match(line)).hasMatch()) {
        text = m.captured(1);
      }
      text.remove('`');
      if (text.isEmpty()) continue;
      const QString anchor = headingAnchor(text);
      if (!names.headings.contains(anchor))  // the first heading of an anchor is the one shown
        names.headings.insert(anchor,
                              text.endsWith('.') || text.endsWith(':') ? text.chopped(1) : text);
    }
  }
  return *pages.insert(key, names);
}

}  // namespace

void setReferenceEntry(QWidget* widget, const QString& target) {
  widget->setProperty(kProperty, target.isEmpty() ? QVariant() : QVariant(target));
  installF1Handling();
}

QString referenceEntry(const QWidget* widget) {
  return widget != nullptr ? widget->property(kProperty).toString() : QString();
}

QString referenceEntryAt(const QWidget* widget) {
  for (const QWidget* w = widget; w != nullptr; w = w->isWindow() ? nullptr : w->parentWidget()) {
    if (const auto* view = qobject_cast<const QAbstractItemView*>(w)) {
      const QModelIndex current = view->currentIndex();
      const QString cell = current.isValid() ? current.data(kReferenceEntryRole).toString() : "";
      if (!cell.isEmpty()) return cell;
    }
    if (const QString own = referenceEntry(w); !own.isEmpty()) return own;
  }
  return {};
}

void setReferenceTip(QWidget* widget, const QString& tip, const QString& target) {
  widget->setToolTip(withReferenceLine(tip, target));
  setReferenceEntry(widget, target);
}

QString referenceLine(const QString& target) {
  const QString page = target.section('#', 0, 0);
  const QString anchor = target.section('#', 1);
  const PageNames& names = namesOf(page);
  const QString title = names.title.isEmpty() ? QFileInfo(page).completeBaseName() : names.title;
  const QString heading = anchor.isEmpty() ? QString() : names.headings.value(anchor, anchor);
  const QString where = heading.isEmpty() ? title : title + QString::fromUtf8(" \u203a ") + heading;
  return (page.startsWith("reference/") ? tr("F1: the reference entry (%1)")
                                        : tr("F1: the User Guide (%1)"))
      .arg(where);
}

QString withReferenceLine(const QString& tip, const QString& target) {
  if (target.isEmpty()) return tip;
  return tip.isEmpty() ? referenceLine(target) : tip + '\n' + referenceLine(target);
}

QString guideEntry(const QString& page, const QString& heading) {
  return page + '#' + headingAnchor(heading);
}

QString strategyEntry(const std::string& strategy) {
  return guideEntry(kStrategiesPage, QString::fromStdString(strategy));
}

QString datasetKindEntry(const std::string& kind) {
  return guideEntry(kDatasetKindsPage, QString::fromStdString(kind));
}

QString modelKindEntry(const std::string& kind) {
  return guideEntry(kModelKindsPage, QString::fromStdString(kind));
}

UserGuide* openGuideAt(QWidget* from, const QString& target) {
  QWidget* window = from->window();
  const auto guideOf = [window] {
    return window->findChild<UserGuide*>(QString(), Qt::FindDirectChildrenOnly);
  };
  UserGuide* guide = guideOf();
  if (guide == nullptr) {
    // The window's Help > User Guide makes its guide (one a window): that one is shown here.
    for (QAction* action : window->findChildren<QAction*>())
      if (action->isEnabled() &&
          action->shortcuts().contains(QKeySequence(QKeySequence::HelpContents))) {
        action->trigger();
        break;
      }
    guide = guideOf();
  }
  if (guide == nullptr) guide = new UserGuide(window);  // a page without the main window
  guide->showEntry(target);
  guide->show();
  guide->raise();
  guide->activateWindow();
  return guide;
}

}  // namespace dtlab::ui
