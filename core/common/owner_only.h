#pragma once

#include <string>

namespace dtlab::core {

// Files that hold secrets (node tokens) must be readable by their owner only, as SSH and
// kubectl require of key files: no group or other permission bits (chmod 600). Empty when the file
// at `path` is such a file; else why it is not, in words that end with what to do ("other users may
// read it (mode 0644); chmod 600 it").
std::string notOwnerOnly(const std::string& path);

}  // namespace dtlab::core
