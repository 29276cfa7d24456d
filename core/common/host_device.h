#pragma once

// DTLAB_HD marks a function that nvcc compiles for both the host and the device, so one
// definition serves the CPU path and a CUDA kernel (the counter-based random numbers and
// the synthetic sample generators). Elsewhere it expands to nothing. Headers that use it
// stay plain C++17, since the kernels are compiled as C++17.
#if defined(__CUDACC__)
#define DTLAB_HD __host__ __device__
#else
#define DTLAB_HD
#endif

namespace dtlab::core::hd {

// std::min, std::max and std::clamp, spelled out so device code may call them; same
// comparisons, so the same results (signed zeros included) on both sides.
template <typename T>
DTLAB_HD constexpr T minOf(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
DTLAB_HD constexpr T maxOf(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
DTLAB_HD constexpr T clampOf(T v, T lo, T hi) {
  return v < lo ? lo : (hi < v ? hi : v);
}

}  // namespace dtlab::core::hd
