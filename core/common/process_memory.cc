#include "core/common/process_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dtlab::core {
namespace {

// Reads one "Key:   1234 kB" line of /proc/self/status.
std::optional<int64_t> statusBytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() ||
        line[key.size()] != ':')
      continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t value = 0;
    std::string unit;
    if (!(fields >> value >> unit) || unit != "kB") return std::nullopt;
    return value * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> residentBytes() {
  return statusBytes("VmRSS");
}

std::optional<int64_t> peakResidentBytes() {
  return statusBytes("VmHWM");
}

bool resetPeakResidentBytes() {
  std::ofstream clearRefs("/proc/self/clear_refs");
  if (!clearRefs) return false;
  clearRefs << "5";
  clearRefs.flush();
  return static_cast<bool>(clearRefs);
}

void keepLargeAllocationsInTheHeap() {
#ifdef __GLIBC__
  for (const char* name : {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"})
    if (std::getenv(name) != nullptr) return;
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit; above it, allocations are
  // rare and large enough for their faults not to matter.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace dtlab::core
