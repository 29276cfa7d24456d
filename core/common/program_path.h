#pragma once

#include <filesystem>

namespace dtlab::core {

// The running program's file (/proc/self/exe): where the programs find what is installed beside
// them (dtlab-node next to dtlab-cli, ../lib/dtlab, ../share/dtlab). Empty when it cannot be
// read.
std::filesystem::path programPath();

}  // namespace dtlab::core
