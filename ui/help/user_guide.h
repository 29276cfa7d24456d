#pragma once
// Help > User Guide: the documentation (docs/, installed to /usr/share/doc/dtlab) read in a
// window of its own, Markdown rendered by Qt with its pictures, its links followed between
// pages; links out of it open in the desktop's browser.
#include <QtCore/QString>
#include <QtWidgets/QDialog>

class QTextBrowser;
class QUrl;
class QToolButton;

namespace dtlab::ui {

// Where the documentation is: $DTLAB_DOCS, else the installed pages beside the program
// (<prefix>/share/doc/dtlab), else the source tree's docs/; empty when none has its index.
QString documentationDir();

// The anchor of a heading, as a code host makes it: lower case, spaces to hyphens,
// punctuation other than '-' and '_' dropped ("## ssp": "ssp"; "Checkpoints and resume." ->
// "checkpoints-and-resume"). The guide names each heading of a page so, and a paragraph's bold
// opening too (its run-in sections: **Non-IID data.**), for "page.md#anchor" to scroll there.
QString headingAnchor(const QString& heading);

class UserGuide final : public QDialog {
  Q_OBJECT
 public:
  explicit UserGuide(QWidget* parent = nullptr);
  // Shows `page` (a file of the documentation, "user-guide.md"); false, with the reason shown
  // in the window, when the documentation or the page is not there.
  bool showPage(const QString& page);
  // Shows `target`, a page and the anchor of a heading on it ("reference/strategies.md#ssp";
  // ui/help/context_help.h), scrolled to the heading; false when the page or the heading is not
  // there (the page, when it is, shown from its top).
  bool showEntry(const QString& target);
  // The anchor of the first heading in view ("" when none is).
  QString headingInView() const;
  QTextBrowser* browser() const { return browser_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // Pictures wider than the page are drawn at its width (the screenshots are 1280-1600 px);
  // `page`: the page shown, whose folder their paths start from.
  void fitPictures(const QUrl& page);
  // A page was shown: its pictures fitted, its headings named by their anchors (a link to
  // "page.md#anchor" scrolls there) and the view at the anchor of its address, if any.
  void pageShown(const QUrl& page);
  void nameHeadings();
  bool load(const QString& page, const QString& anchor);

  QTextBrowser* browser_ = nullptr;
  QToolButton* back_ = nullptr;
  QToolButton* forward_ = nullptr;
};

}  // namespace dtlab::ui
