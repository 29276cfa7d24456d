#pragma once
// Numbers as spec messages and written specs show them: the shortest text that reads back as
// the same value. Below the spec's types, so that the settings and the parser share it.
#include <string>

namespace dtlab::core::spec_detail {

std::string formatNumber(double value);
std::string formatFloat(float value);

}  // namespace dtlab::core::spec_detail
