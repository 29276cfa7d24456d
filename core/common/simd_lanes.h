#pragma once

// One group of SIMD lanes as a GCC/Clang vector type (arithmetic is elementwise and a scalar
// operand is broadcast), as wide as the build's target allows (-march=native by default:
// 16 floats with AVX-512, 8 with AVX, 4 with SSE2), with what the vector extension lacks:
// square root (GCC keeps a library call for std::sqrt), a fused multiply-add that is one
// instruction where the target has one, a sum of the lanes, and unaligned loads and stores.
// The optimizers' updates (core/optim/optimizer.cc) and the narrow GEMMs
// (core/backend/small_gemm.cc) compute on it.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace dtlab::core {

#if defined(__AVX512F__)
using Lanes = float __attribute__((vector_size(64)));
// maskz with a full mask is plain vsqrtps; GCC 12's _mm512_sqrt_ps trips
// -Wmaybe-uninitialized on its own placeholder vector.
inline Lanes sqrtOf(Lanes x) {
  return _mm512_maskz_sqrt_ps(0xFFFF, x);
}
#elif defined(__AVX__)
using Lanes = float __attribute__((vector_size(32)));
inline Lanes sqrtOf(Lanes x) {
  return _mm256_sqrt_ps(x);
}
#elif defined(__SSE2__)
using Lanes = float __attribute__((vector_size(16)));
inline Lanes sqrtOf(Lanes x) {
  return _mm_sqrt_ps(x);
}
#else
using Lanes = float __attribute__((vector_size(16)));
inline Lanes sqrtOf(Lanes x) {
  for (int k = 0; k < static_cast<int>(sizeof(Lanes) / sizeof(float)); ++k) x[k] = std::sqrt(x[k]);
  return x;
}
#endif
constexpr int64_t kLaneCount = sizeof(Lanes) / sizeof(float);

// a * b + c, rounded once where the target has FMA (every x86 with AVX2), else twice.
inline Lanes fusedMultiplyAdd(Lanes a, Lanes b, Lanes c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__) && defined(__AVX__)
  return _mm256_fmadd_ps(a, b, c);
#elif defined(__FMA__)
  return _mm_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}

// The lanes' sum, by halves (the upper half added to the lower until one lane is left):
// always the same order of additions; the halves are register extracts, not stores.
using Floats4 = float __attribute__((vector_size(16)));
using Floats8 = float __attribute__((vector_size(32)));
using Floats16 = float __attribute__((vector_size(64)));
inline float sumByHalves(Floats4 x) {
  return (x[0] + x[2]) + (x[1] + x[3]);
}
inline float sumByHalves(Floats8 x) {
  return sumByHalves(__builtin_shufflevector(x, x, 0, 1, 2, 3) +
                     __builtin_shufflevector(x, x, 4, 5, 6, 7));
}
inline float sumByHalves(Floats16 x) {
  return sumByHalves(__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7) +
                     __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline float sumOfLanes(Lanes x) {
  return sumByHalves(x);
}

inline Lanes loadLanes(const float* p) {
  Lanes value;
  std::memcpy(&value, p, sizeof value);  // unaligned: ranges start anywhere
  return value;
}
inline void storeLanes(float* p, const Lanes& value) {
  std::memcpy(p, &value, sizeof value);
}

}  // namespace dtlab::core
