#include "ui/help/user_guide.h"

#include <algorithm>

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QUrl>
#include <QtGui/QAbstractTextDocumentLayout>
#include <QtGui/QDesktopServices>
#include <QtGui/QImageReader>
#include <QtGui/QTextBlock>
#include <QtGui/QTextCursor>
#include <QtGui/QTextDocument>
#include <QtGui/QTextFragment>
#include <QtGui/QTextImageFormat>
#include <QtGui/QTextTable>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QScrollBar>
#include <QtWidgets/QTextBrowser>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QVBoxLayout>

namespace dtlab::ui {

QString documentationDir() {
  QStringList candidates;
  const QString fromEnv = qEnvironmentVariable("DTLAB_DOCS");
  if (!fromEnv.isEmpty()) candidates << fromEnv;
  // installer/packaging.cmake: /usr/bin/dtlab, /usr/share/doc/dtlab.
  candidates << QDir(QCoreApplication::applicationDirPath()).filePath("../share/doc/dtlab");
#ifdef DTLAB_SOURCE_DIR
  candidates << QStringLiteral(DTLAB_SOURCE_DIR "/docs");
#endif
  for (const QString& dir : candidates)
    if (QFileInfo(QDir(dir).filePath("README.md")).isFile()) return QDir(dir).canonicalPath();
  return {};
}

QString headingAnchor(const QString& heading) {
  QString out;
  for (const QChar c : heading.trimmed().toLower()) {
    if (c.isLetterOrNumber() || c == '-' || c == '_')
      out += c;
    else if (c == ' ')
      out += '-';
  }
  return out;
}

UserGuide::UserGuide(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("DTLab User Guide"));
  resize(1000, 760);
  browser_ = new QTextBrowser(this);
  browser_->setOpenLinks(false);  // anchorClicked decides where a link goes
  auto* home = new QToolButton(this);
  home->setText(tr("Contents"));
  back_ = new QToolButton(this);
  back_->setText(tr("Back"));
  back_->setEnabled(false);
  forward_ = new QToolButton(this);
  forward_->setText(tr("Forward"));
  forward_->setEnabled(false);
  auto* bar = new QHBoxLayout;
  bar->addWidget(back_);
  bar->addWidget(forward_);
  bar->addWidget(home);
  bar->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(browser_, 1);
  connect(back_, &QToolButton::clicked, browser_, &QTextBrowser::backward);
  connect(forward_, &QToolButton::clicked, browser_, &QTextBrowser::forward);
  connect(home, &QToolButton::clicked, this, [this] { showPage(QStringLiteral("README.md")); });
  connect(browser_, &QTextBrowser::sourceChanged, this,
          [this](const QUrl& page) { pageShown(page); });
  connect(browser_, &QTextBrowser::backwardAvailable, back_, &QToolButton::setEnabled);
  connect(browser_, &QTextBrowser::forwardAvailable, forward_, &QToolButton::setEnabled);
  // A link between the documentation's pages is followed here; one out of it (a web page, a
  // file of the source tree) goes to the desktop.
  connect(browser_, &QTextBrowser::anchorClicked, this, [this](const QUrl& link) {
    const QUrl url = browser_->source().resolved(link);
    const QString dir = documentationDir();
    if (url.isLocalFile() && !dir.isEmpty() && url.toLocalFile().startsWith(dir + "/"))
      browser_->setSource(url);
    else
      QDesktopServices::openUrl(url);
  });
}

bool UserGuide::showPage(const QString& page) {
  return load(page, {});
}

bool UserGuide::showEntry(const QString& target) {
  const QString anchor = target.section('#', 1);
  if (!load(target.section('#', 0, 0), anchor)) return false;
  if (anchor.isEmpty()) return true;
  for (QTextBlock block = browser_->document()->begin(); block.isValid(); block = block.next())
    for (auto it = block.begin(); !it.atEnd(); ++it)
      if (it.fragment().charFormat().anchorNames().contains(anchor)) return true;
  return false;
}

bool UserGuide::load(const QString& page, const QString& anchor) {
  const QString dir = documentationDir();
  const QString path = dir.isEmpty() ? QString() : QDir(dir).filePath(page);
  if (path.isEmpty() || !QFileInfo(path).isFile()) {
    browser_->setMarkdown(
        tr("# No documentation here\n\nDTLab looks for its pages in `$DTLAB_DOCS`, in "
           "`share/doc/dtlab` beside the program (the packages install them there) and in "
           "the source tree's `docs/`; none of them holds `%1`.")
            .arg(page));
    return false;
  }
  browser_->setSearchPaths({dir});
  QUrl url = QUrl::fromLocalFile(path);
  if (!anchor.isEmpty()) url.setFragment(anchor);
  browser_->setSource(url, QTextDocument::MarkdownResource);
  return true;
}

void UserGuide::pageShown(const QUrl& page) {
  fitPictures(page);  // source() still says the page before while the signal is delivered
  nameHeadings();
  // QTextBrowser looked for the anchor before the headings had their names.
  if (const QString anchor = page.fragment(); !anchor.isEmpty()) browser_->scrollToAnchor(anchor);
}

void UserGuide::nameHeadings() {
  QTextDocument* doc = browser_->document();
  for (QTextBlock block = doc->begin(); block.isValid(); block = block.next()) {
    if (block.text().isEmpty() || QTextCursor(block).currentTable() != nullptr) continue;
    QString heading;
    if (block.blockFormat().headingLevel() > 0) {
      heading = block.text();
    } else {  // a paragraph's bold opening
      for (auto it = block.begin(); !it.atEnd(); ++it) {
        if (it.fragment().charFormat().fontWeight() < QFont::Bold) break;
        heading += it.fragment().text();
      }
    }
    if (heading.isEmpty()) continue;
    QTextCharFormat name;
    name.setAnchor(true);
    name.setAnchorNames({headingAnchor(heading)});
    QTextCursor cursor(doc);
    cursor.setPosition(block.position());
    cursor.setPosition(block.position() + static_cast<int>(heading.size()),
                       QTextCursor::KeepAnchor);
    cursor.mergeCharFormat(name);
  }
}

QString UserGuide::headingInView() const {
  const int top = browser_->verticalScrollBar()->value();
  const int bottom = top + browser_->viewport()->height();
  QAbstractTextDocumentLayout* layout = browser_->document()->documentLayout();
  for (QTextBlock block = browser_->document()->begin(); block.isValid(); block = block.next()) {
    const QStringList names =
        block.begin().atEnd() ? QStringList() : block.begin().fragment().charFormat().anchorNames();
    if (names.isEmpty()) continue;
    const qreal y = layout->blockBoundingRect(block).top();
    if (y >= top - 1 && y < bottom) return names.front();
  }
  return {};
}

void UserGuide::resizeEvent(QResizeEvent* event) {
  QDialog::resizeEvent(event);
  fitPictures(browser_->source());
}

void UserGuide::fitPictures(const QUrl& page) {
  QTextDocument* doc = browser_->document();
  const qreal room = browser_->viewport()->width() - 2 * doc->documentMargin() - 4;
  if (room <= 0) return;
  const QDir base = QFileInfo(page.toLocalFile()).dir();
  for (QTextBlock block = doc->begin(); block.isValid(); block = block.next()) {
    for (auto it = block.begin(); !it.atEnd(); ++it) {
      const QTextFragment fragment = it.fragment();
      if (!fragment.isValid() || !fragment.charFormat().isImageFormat()) continue;
      QTextImageFormat image = fragment.charFormat().toImageFormat();
      const QSize natural = QImageReader(base.filePath(image.name())).size();
      if (!natural.isValid()) continue;
      const qreal width = std::min<qreal>(natural.width(), room);
      if (image.width() == width) continue;
      image.setWidth(width);
      image.setHeight(width * natural.height() / natural.width());
      QTextCursor cursor(doc);
      cursor.setPosition(fragment.position());
      cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
      cursor.setCharFormat(image);
    }
  }
}

}  // namespace dtlab::ui
