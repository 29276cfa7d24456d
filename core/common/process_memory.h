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

// Has glibc serve large allocations from the heap and keep what is freed there (up to 256 MiB
// above the top), instead of mapping fresh pages for every allocation over 128 KiB and
// unmapping them on free. Messages of megabytes (a parameter-server pull or push, gRPC's slices
// for them) are allocated and freed every step, and each fresh page costs a fault: measured in
// `bench ps` (1.3 M parameters, 2 workers, a 2-core VM where a fault is dear), 122-123 ms per
// pull + push with glibc's defaults, 30-41 ms with the heap kept. The price: a process's
// resident size stays near its high-water mark after a large free. The daemons and the CLI
// call it first thing; an explicit MALLOC_/GLIBC_TUNABLES setting in the environment wins.
void keepLargeAllocationsInTheHeap();

}  // namespace dtlab::core
