#pragma once

#include <cstdint>
#include <optional>

namespace dtlab::core {

// Resident memory of this process as the kernel accounts it (Linux /proc/self/status).
// Each returns std::nullopt where the figure is unavailable (not Linux, /proc not
// mounted), so callers can report "unknown" rather than a wrong number.
//
// The peak is per process: a daemon that hosts several workers, or runs jobs one after
// another, sees their sum or its all-time high unless it resets the peak between jobs.

// VmRSS: bytes resident now.
std::optional<int64_t> residentBytes();
// VmHWM: the highest residentBytes() since the process started or since the last
// successful resetPeakResidentBytes().
std::optional<int64_t> peakResidentBytes();
// Lowers the peak to the current resident size (writes "5" to /proc/self/clear_refs,
// Linux 4.0 and later). Returns false where the kernel does not support it; the peak
// then keeps counting from process start.
bool resetPeakResidentBytes();

}  // namespace dtlab::core
