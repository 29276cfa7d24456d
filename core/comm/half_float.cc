#include "core/comm/half_float.h"

#include <algorithm>
#include <bit>
#include <cmath>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define DTLAB_F16C 1
#endif

namespace dtlab::core {
namespace {

uint16_t fp16FromFloat(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, infinity
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (x < 0x38800000u) {
    // Below the smallest normal (2^-14): a multiple of 2^-24. Scaling by 2^24 is exact, and
    // nearbyint rounds to nearest even in the default rounding mode.
    const float scaled = std::bit_cast<float>(x) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t exponent = (x >> 23) - 127 + 15;
  const uint32_t mantissa = x & 0x7fffffu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // may carry into the exponent
  return sign | static_cast<uint16_t>(h);
}

float fp16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1.0p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t bf16FromFloat(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16ToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

}  // namespace

const char* toString(HalfFormat format) {
  return format == HalfFormat::kFp16 ? "fp16" : "bf16";
}

uint16_t floatToHalf(HalfFormat format, float value) {
  return format == HalfFormat::kFp16 ? fp16FromFloat(value) : bf16FromFloat(value);
}

float halfToFloat(HalfFormat format, uint16_t value) {
  return format == HalfFormat::kFp16 ? fp16ToFloat(value) : bf16ToFloat(value);
}

float halfMax(HalfFormat format) {
  return format == HalfFormat::kFp16 ? 65504.0f : std::bit_cast<float>(0x7f7f0000u);
}

float fp16Scale(double bound) {
  if (!(bound > 0.0) || !std::isfinite(bound)) return 1.0f;
  const int exponent = std::clamp(
      static_cast<int>(std::floor(std::log2(halfMax(HalfFormat::kFp16) / bound))), -126, 126);
  return std::ldexp(1.0f, exponent);
}

void floatToHalf(HalfFormat format, const float* in, uint16_t* out, int64_t count) {
  int64_t i = 0;
#ifdef DTLAB_F16C
  if (format == HalfFormat::kFp16)
    for (; i + 8 <= count; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  if (format == HalfFormat::kFp16)
    for (; i < count; ++i) out[i] = fp16FromFloat(in[i]);
  else
    for (; i < count; ++i) out[i] = bf16FromFloat(in[i]);
}

void halfToFloat(HalfFormat format, const uint16_t* in, float* out, int64_t count) {
  int64_t i = 0;
#ifdef DTLAB_F16C
  if (format == HalfFormat::kFp16)
    for (; i + 8 <= count; i += 8)
      _mm256_storeu_ps(out + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  if (format == HalfFormat::kFp16)
    for (; i < count; ++i) out[i] = fp16ToFloat(in[i]);
  else
    for (; i < count; ++i) out[i] = bf16ToFloat(in[i]);
}

void addHalves(HalfFormat format, const uint16_t* a, const uint16_t* b, uint16_t* out,
               int64_t count) {
  constexpr int64_t kBlock = 256;
  float x[kBlock];
  float y[kBlock];
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t n = std::min(kBlock, count - begin);
    halfToFloat(format, a + begin, x, n);
    halfToFloat(format, b + begin, y, n);
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
    floatToHalf(format, x, out + begin, n);
  }
}

}  // namespace dtlab::core
