#pragma once

#include <string_view>

namespace dtlab {

// `s` without its leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string_view trimBlanks(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// The lines of a hand-written text (a hostfile, a configuration file) that say something:
// fn(lineNumber, line) for each, its number counted from 1, the line without what follows a
// '#' and without surrounding blanks; blank and comment-only lines are skipped.
template <typename Fn>
void forEachContentLine(std::string_view text, Fn fn) {
  int number = 0;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++number;
    line = trimBlanks(line.substr(0, line.find('#')));
    if (!line.empty()) fn(number, line);
  }
}

}  // namespace dtlab
