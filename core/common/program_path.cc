#include "core/common/program_path.h"

#include <system_error>

namespace dtlab::core {

std::filesystem::path programPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self;
}

}  // namespace dtlab::core
