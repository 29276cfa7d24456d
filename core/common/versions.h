#pragma once

#include <string>
#include <vector>

namespace dtlab::core {

// The libraries the core runs with, as "name version": SQLite and oneDNN as they report
// themselves at run time, Gloo and nlohmann/json as built against (they report nothing).
std::vector<std::string> libraryVersions();

}  // namespace dtlab::core
