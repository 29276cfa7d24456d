#pragma once
// The reference pages of docs/reference, made from this build's registries (strategies, dataset
// kinds, model kinds, the metric table) and the command-line usage, so that they say what the
// program does: `dtlab-cli docs --out docs/reference` writes them, and a test checks that the
// pages in the repository are the ones this build makes.
#include <map>
#include <string>
#include <vector>

namespace dtlab::app {

// File name ("strategies.md") -> its Markdown. `cliUsage`: dtlab-cli's whole usage text.
std::map<std::string, std::string> referencePages(const std::string& cliUsage);

// `dtlab-cli docs --out DIR` writes the pages into DIR (made when missing; a page no longer
// made is removed); `dtlab-cli docs --check DIR` compares them and fails naming each page that
// differs, is missing or is left over, with the command that refreshes them. Returns the exit
// code.
int docsCommand(const std::vector<std::string>& argv, const std::string& cliUsage);

}  // namespace dtlab::app
