#include "ui/help/user_guide.h"

#include <algorithm>

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QUrl>
#include <QtGui/QDesktopServices>
#include <QtGui/QImageReader>
#include <QtGui/QTextBlock>
#include <QtGui/QTextCursor>
#include <QtGui/QTextDocument>
#include <QtGui/QTextFragment>
#include <QtGui/QTextImageFormat>
#include <QtWidgets/QHBoxLayout>
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
  connect(browser_, &QTextBrowser::sourceChanged, this, [this] { fitPictures(); });
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
  browser_->setSource(QUrl::fromLocalFile(path), QTextDocument::MarkdownResource);
  return true;
}

void UserGuide::resizeEvent(QResizeEvent* event) {
  QDialog::resizeEvent(event);
  fitPictures();
}

void UserGuide::fitPictures() {
  QTextDocument* doc = browser_->document();
  const qreal room = browser_->viewport()->width() - 2 * doc->documentMargin() - 4;
  if (room <= 0) return;
  const QDir base = QFileInfo(browser_->source().toLocalFile()).dir();
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
