#pragma once
// Context help: an editor field names the entry of the documentation that explains it, a page
// of docs/ and a heading on it ("reference/strategies.md#ssp"; no anchor: the page's top). Its
// tooltip ends with a line saying where that is, and F1 while the field (or a part of it: a
// spin box's text, a table's cell editor) has the focus opens the User Guide at the entry
// instead of at its front page; F1 anywhere else is the window's Help > User Guide as before.
//
// An anchor is a heading's, as a code host makes it (`## ssp`: "ssp"; `## Non-IID data`:
// "non-iid-data"); a paragraph that opens with a bold phrase (**Checkpoints and resume.**) is
// a heading here too, the guide's run-in sections.
#include <string>

#include <QtCore/QString>
#include <QtCore/Qt>

class QWidget;

namespace dtlab::ui {

class UserGuide;

// An item view's cells may each name their own entry: the model's data under this role (a
// target, QString) for the view's current cell wins over the view's own entry.
inline constexpr int kReferenceEntryRole = Qt::UserRole + 0x4631;

// The entry F1 opens while `widget` or one of its children has the focus; "" removes it.
// The first call installs the F1 handling in the application.
void setReferenceEntry(QWidget* widget, const QString& target);
QString referenceEntry(const QWidget* widget);
// The entry for the focus at `widget`: the nearest of it and its parents (within its window)
// that names one, an item view's current cell before the view. "" when none does.
QString referenceEntryAt(const QWidget* widget);
// Both at once: `tip` with the reference line under it, and the entry F1 opens.
void setReferenceTip(QWidget* widget, const QString& tip, const QString& target);

// The line a tooltip ends with: "F1: the reference entry (Strategies › ssp)" for a page of
// reference/, "F1: the User Guide (Distributed runs › Checkpoints and resume)" for another
// (titles as the documentation has them, or the file's and anchor's names without it).
QString referenceLine(const QString& target);
// `tip`, a line break and the reference line ("" tip: the line alone).
QString withReferenceLine(const QString& tip, const QString& target);

// `page`#anchor of `heading` ("distributed-runs.md", "Non-IID data"; headingAnchor in
// ui/help/user_guide.h).
QString guideEntry(const QString& page, const QString& heading);
// The generated reference's entries (app/reference_docs.cc: a `## name` per registry entry).
QString strategyEntry(const std::string& strategy);
QString datasetKindEntry(const std::string& kind);
QString modelKindEntry(const std::string& kind);
inline const char* const kStrategiesPage = "reference/strategies.md";
inline const char* const kDatasetKindsPage = "reference/dataset-kinds.md";
inline const char* const kModelKindsPage = "reference/model-kinds.md";
// The spec's fixed sections (core/spec/spec_fields.h): a heading per section ("training").
inline const char* const kSpecPage = "reference/spec.md";

// Shows the guide of `from`'s window at `target`: the one its Help > User Guide shows (that
// action makes it when there is none yet), else one of the window's own. What F1 does.
UserGuide* openGuideAt(QWidget* from, const QString& target);

}  // namespace dtlab::ui
