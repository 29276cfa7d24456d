#include "core/common/check.h"

namespace dtlab::detail {

void throwEnforce(const char* file, int line, const char* condition, const std::string& context) {
  std::ostringstream out;
  out << file << ":" << line << ": check failed: " << condition;
  if (!context.empty()) out << " (" << context << ")";
  throw EnforceError(out.str());
}

}  // namespace dtlab::detail
