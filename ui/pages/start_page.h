#pragma once
// What the window shows while no project is open: the example experiments to start from
// (each opened as a project of its own in the user's documents, the example itself never
// written), the projects opened recently, and New / Open.
#include <QtCore/QString>
#include <QtCore/QStringList>
#include <QtWidgets/QWidget>

#include <vector>

class QListWidget;

namespace dtlab::ui {

// Where the example specs are: $DTLAB_RESOURCES/specs, else the installed ones beside the
// program (<prefix>/share/dtlab/examples), else the source tree's resources/specs; empty when
// none of them holds any.
QString examplesDir();
// The folder an example's project is made in: the user's documents, DTLab/.
QString exampleProjectsDir();

// A guided tour: an example that answers one question, run and then compared.
struct Tour {
  QString title;    // the question
  QString example;  // the example spec's file name in examplesDir()
  QString shows;    // what the comparison will show, for its tooltip
  // Empty: the tour lands on the comparison of its runs. Else on the Predict page at these node
  // counts, calibrated from its runs (a 1-node and a 2-node run of each strategy's kind).
  std::vector<int> predictAt{};
};
// The tours whose example is there to run.
std::vector<Tour> tours();

class StartPage final : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);
  // Reads the examples and the recent projects again.
  void refresh();
  QListWidget* examples() const { return examples_; }
  QListWidget* recent() const { return recent_; }
  QListWidget* tourList() const { return tours_; }

 signals:
  void exampleChosen(const QString& specPath);
  // A tour: open its example, run it, land on its comparison.
  void tourChosen(const QString& specPath, const QString& title);
  void recentChosen(const QString& projectPath);
  void newRequested();
  void openRequested();

 private:
  QListWidget* examples_ = nullptr;
  QListWidget* recent_ = nullptr;
  QListWidget* tours_ = nullptr;
};

}  // namespace dtlab::ui
