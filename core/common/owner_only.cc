#include "core/common/owner_only.h"

#include <sys/stat.h>

#include <cstdio>

namespace dtlab::core {

std::string notOwnerOnly(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "cannot read it (no such file, or no permission)";
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return std::string("other users may read it (mode ") + mode +
           " gives group or others access); chmod 600 it, owned by the user this program runs as";
  }
  return {};
}

}  // namespace dtlab::core
