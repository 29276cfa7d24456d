#include "core/common/text_table.h"

#include <algorithm>

namespace dtlab {

std::size_t displayWidth(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string alignedLines(const std::vector<std::vector<std::string>>& cells,
                         const std::vector<bool>& leftAligned) {
  std::vector<std::size_t> widths(leftAligned.size(), 0);
  for (const auto& line : cells)
    for (std::size_t j = 0; j < line.size(); ++j)
      widths[j] = std::max(widths[j], displayWidth(line[j]));
  std::string out;
  for (const auto& cellsOfLine : cells) {
    std::string line;
    for (std::size_t j = 0; j < cellsOfLine.size(); ++j) {
      const std::string& cell = cellsOfLine[j];
      const std::string pad(widths[j] - displayWidth(cell), ' ');
      const bool last = j + 1 == cellsOfLine.size();
      if (j > 0) line += "  ";
      line += leftAligned[j] ? (last ? cell : cell + pad) : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += "  " + line + "\n";
  }
  return out;
}

}  // namespace dtlab
