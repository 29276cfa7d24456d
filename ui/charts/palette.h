#pragma once

#include <cstdint>
#include <iterator>

#include <QtGui/QColor>

namespace dtlab::ui {

// Colours that stay apart on screen, in print and for colour-blind readers (Okabe-Ito),
// yellow last: it is the hardest to see on white.
inline const QColor kRunPalette[] = {
    QColor(0, 114, 178),   QColor(230, 159, 0),  QColor(0, 158, 115), QColor(213, 94, 0),
    QColor(204, 121, 167), QColor(86, 180, 233), QColor(0, 0, 0),     QColor(240, 228, 66)};

// The i-th series of a chart (workers, classes): the same colours, then grey and brown so
// that ten classes stay apart, then again from the start.
inline QColor seriesColour(std::size_t i) {
  constexpr std::size_t n = 8;  // std::size(kRunPalette), which the cases below assume
  switch (i % (n + 2)) {
    case 8:
      return QColor(150, 150, 150);
    case 9:
      return QColor(120, 60, 20);
    default:
      return kRunPalette[i % (n + 2)];
  }
}

// A run's colour follows its id, so it stays the same in the table and the chart whichever
// other runs are chosen.
inline QColor runColour(int64_t runId) {
  const auto n = static_cast<int64_t>(std::size(kRunPalette));
  return kRunPalette[((runId - 1) % n + n) % n];
}

}  // namespace dtlab::ui
