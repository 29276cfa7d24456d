#pragma once
// How a parameter-server block's values travel when its variant compresses (the variant
// setting "compression" of async_ps, ssp and hybrid): a push's gradient and a pull's
// parameters as float32, as 16-bit floats, or (a top-k gradient) as its nonzero entries.
// The encodings are exact for what they are given to carry, except the 16-bit ones, which
// round; run and replay encode the same values the same way, so a replay applies what the
// server applied.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm/gradient_compression.h"

namespace dtlab::core {

enum class PsEncoding : int32_t {
  kFloat32 = 0,  // count x float32
  kFp16 = 1,     // float32 scale (a power of two), then count x fp16 of value x scale
  kBf16 = 2,     // count x bf16
  kSparse = 3,   // uint32 n, then n x uint32 index (increasing), then n x float32 value
};
const char* toString(PsEncoding encoding);
// The encoding a protocol field names; throws Error for an unknown one.
PsEncoding psEncodingFromWire(int32_t value);

// What the variant's compression sends: pushes (topk: sparse; fp16, bf16: 16-bit) and pulls
// (fp16, bf16: 16-bit; topk: float32, for a sparse pull would need the server to keep every
// worker's replica).
PsEncoding pushEncoding(const CompressionConfig& config);
PsEncoding pullEncoding(const CompressionConfig& config);

// Appends the encoding of values[0, count) to `out`.
void encodeValues(PsEncoding encoding, const float* values, int64_t count, std::string& out);
// Bytes encodeValues would append.
int64_t encodedBytes(PsEncoding encoding, const float* values, int64_t count);
// Decodes `bytes` into out[0, count). Throws Error saying what is wrong with a payload of
// the wrong size, an index out of range or out of order, or a scale that is not a power of two.
void decodeValues(PsEncoding encoding, std::string_view bytes, float* out, int64_t count);
// In place: values as a pull or push of `encoding` delivers them (decode of encode).
void roundTrip(PsEncoding encoding, float* values, int64_t count);

// A worker's top-k compression of its pushes: per block, the `ratio` of its values largest in
// magnitude, with what it did not send kept and added to its next push (error feedback). The
// gradient is replaced in place by what the push delivers (zeros but for k values a block).
class PushSparsifier {
 public:
  PushSparsifier(double ratio, int64_t count);
  // `blocks` tile [0, count) (the server's layout).
  void apply(float* gradient, const std::vector<GradientRange>& blocks);
  const std::vector<float>& keptError() const { return error_; }

 private:
  double ratio_;
  std::vector<float> error_;
  std::vector<float> magnitudes_;
  std::vector<uint32_t> chosen_;
};

}  // namespace dtlab::core
