// A parameter server's compressed payloads (core/train/ps_encoding.h) as a daemon receives them
// in a push: the first byte picks the encoding and the block's size, the rest is the payload. It
// is refused with dtlab::Error saying what is wrong, or decodes to values that encode and
// decode back to themselves (what a replay relies on: rounding twice rounds once).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/check.h"
#include "core/train/ps_encoding.h"
#include "tests/fuzz/fuzz_support.h"

using namespace dtlab::core;
using dtlab::fuzz::finding;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const int32_t wire = data[0] & 7;          // 4..7: unknown encodings, refused
  const int64_t count = 1 + (data[0] >> 3);  // 1..32 values
  const std::string_view payload = input.substr(1);
  std::vector<float> values(static_cast<std::size_t>(count), -1.0f);
  PsEncoding encoding;
  try {
    encoding = psEncodingFromWire(wire);
    decodeValues(encoding, payload, values.data(), count);
  } catch (const dtlab::Error&) {
    return 0;  // refused, as it should be
  }
  if (wire > 3) finding("an unknown encoding was accepted", input);
  // What a replay does to what the server applied: it must change nothing, NaN for NaN.
  std::vector<float> again = values;
  roundTrip(encoding, again.data(), count);
  if (std::memcmp(again.data(), values.data(), values.size() * sizeof(float)) != 0) {
    bool nanForNan = true;
    for (std::size_t i = 0; i < values.size(); ++i)
      nanForNan =
          nanForNan && (again[i] == values[i] || (again[i] != again[i] && values[i] != values[i]));
    if (!nanForNan) finding("decoded values changed when encoded and decoded again", input);
  }
  std::string bytes;
  encodeValues(encoding, values.data(), count, bytes);
  if (static_cast<int64_t>(bytes.size()) != encodedBytes(encoding, values.data(), count))
    finding("encodedBytes disagrees with what encodeValues wrote", input);
  return 0;
}
