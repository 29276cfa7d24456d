#pragma once
// 16-bit floats for compressed collectives: IEEE binary16 ("fp16": 5 exponent bits, 10 of
// mantissa, largest finite 65504) and bfloat16 ("bf16": float32's 8 exponent bits, 7 of
// mantissa). Conversions round to nearest, ties to even, as hardware converters do; NaN stays
// NaN and values beyond fp16's range become infinities (the caller scales to avoid that).
#include <cstdint>

namespace dtlab::core {

enum class HalfFormat { kFp16, kBf16 };
const char* toString(HalfFormat format);

// Element-wise conversions of `count` values.
void floatToHalf(HalfFormat format, const float* in, uint16_t* out, int64_t count);
void halfToFloat(HalfFormat format, const uint16_t* in, float* out, int64_t count);
// out[i] = round(a[i] + b[i]): the sum of two 16-bit values taken in float32 and rounded once
// (a collective's reduction). out may be a or b.
void addHalves(HalfFormat format, const uint16_t* a, const uint16_t* b, uint16_t* out,
               int64_t count);

// One value each way (tests, and the scalar tails of the loops above).
uint16_t floatToHalf(HalfFormat format, float value);
float halfToFloat(HalfFormat format, uint16_t value);

// The largest finite value of the format.
float halfMax(HalfFormat format);
// The power of two that puts magnitudes up to `bound` just inside fp16's range, so that nothing
// overflows and small values keep their digits (1 for a bound of 0 or not finite).
float fp16Scale(double bound);

}  // namespace dtlab::core
