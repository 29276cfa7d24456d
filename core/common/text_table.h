#pragma once
// Text tables for terminals and logs: `dtlab-cli compare`, the comparison a run prints, the
// statistics and seed tables.
#include <cstddef>
#include <string>
#include <vector>

namespace dtlab {

// Terminal columns, not bytes: "\u2013" is three bytes of UTF-8 and one column.
std::size_t displayWidth(const std::string& text);

// Aligned columns two spaces apart, each line indented by two: left-aligned where asked,
// else right-aligned (a figure column's heading over its figures); the last column gets no
// padding after it.
std::string alignedLines(const std::vector<std::vector<std::string>>& cells,
                         const std::vector<bool>& leftAligned);

}  // namespace dtlab
