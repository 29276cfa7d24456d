#pragma once
// Help > User Guide: the documentation (docs/, installed to /usr/share/doc/dtlab) read in a
// window of its own, Markdown rendered by Qt with its pictures, its links followed between
// pages; links out of it open in the desktop's browser.
#include <QtCore/QString>
#include <QtWidgets/QDialog>

class QTextBrowser;
class QToolButton;

namespace dtlab::ui {

// Where the documentation is: $DTLAB_DOCS, else the installed pages beside the program
// (<prefix>/share/doc/dtlab), else the source tree's docs/; empty when none has its index.
QString documentationDir();

class UserGuide final : public QDialog {
  Q_OBJECT
 public:
  explicit UserGuide(QWidget* parent = nullptr);
  // Shows `page` (a file of the documentation, "user-guide.md"); false, with the reason shown
  // in the window, when the documentation or the page is not there.
  bool showPage(const QString& page);
  QTextBrowser* browser() const { return browser_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // Pictures wider than the page are drawn at its width (the screenshots are 1280-1600 px).
  void fitPictures();

  QTextBrowser* browser_ = nullptr;
  QToolButton* back_ = nullptr;
  QToolButton* forward_ = nullptr;
};

}  // namespace dtlab::ui
