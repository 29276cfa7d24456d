#pragma once
// An enum's values with their names, as a table of {value, name} pairs (an array): the name of a
// value, the value of a name, and the names listed, for the toString / parse pairs of the
// spec's, the store's and the wire's enums.
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace dtlab {

// The name of `value` in `names`, or `fallback` when the table lacks it.
template <typename Table, typename Enum, typename Name>
Name enumName(const Table& names, Enum value, Name fallback) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return fallback;
}

// The value named `text`, or nullopt.
template <typename Table>
auto enumValue(const Table& names, std::string_view text)
    -> std::optional<std::remove_cvref_t<decltype(std::begin(names)->first)>> {
  for (const auto& [v, name] : names)
    if (text == name) return v;
  return std::nullopt;
}

// "a, b, c": every name of the table, for messages that say what is accepted.
template <typename Table>
std::string enumNameList(const Table& names) {
  std::string out;
  for (const auto& [v, name] : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace dtlab
