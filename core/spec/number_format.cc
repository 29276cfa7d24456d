#include "core/spec/number_format.h"

#include <charconv>
#include <cmath>

namespace dtlab::core {

namespace spec_detail {

std::string formatNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string formatFloat(float value) {
  if (!std::isfinite(value)) return formatNumber(value);
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace spec_detail

}  // namespace dtlab::core
