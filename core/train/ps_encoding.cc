#include "core/train/ps_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/comm/half_float.h"
#include "core/common/check.h"

namespace dtlab::core {
namespace {

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T read(std::string_view bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

// The largest finite magnitude of the values (0 for none).
float largestMagnitude(const float* values, int64_t count) {
  float largest = 0.0f;
  for (int64_t i = 0; i < count; ++i)
    if (std::isfinite(values[i])) largest = std::max(largest, std::abs(values[i]));
  return largest;
}

int64_t nonzeros(const float* values, int64_t count) {
  int64_t n = 0;
  for (int64_t i = 0; i < count; ++i) n += values[i] != 0.0f;
  return n;
}

void expectSize(PsEncoding encoding, std::string_view bytes, std::size_t due, int64_t count) {
  if (bytes.size() != due)
    throw Error(std::string(toString(encoding)) + " values of a block of " + std::to_string(count) +
                ": " + std::to_string(bytes.size()) + " bytes where " + std::to_string(due) +
                " were due");
}

}  // namespace

const char* toString(PsEncoding encoding) {
  switch (encoding) {
    case PsEncoding::kFloat32:
      return "float32";
    case PsEncoding::kFp16:
      return "fp16";
    case PsEncoding::kBf16:
      return "bf16";
    case PsEncoding::kSparse:
      return "sparse";
  }
  return "float32";
}

PsEncoding psEncodingFromWire(int32_t value) {
  if (value < 0 || value > static_cast<int32_t>(PsEncoding::kSparse))
    throw Error("encoding " + std::to_string(value) + " is not one of 0 (float32), 1 (fp16), " +
                "2 (bf16) or 3 (sparse)");
  return static_cast<PsEncoding>(value);
}

PsEncoding pushEncoding(const CompressionConfig& config) {
  switch (config.kind) {
    case CompressionKind::kFp16:
      return PsEncoding::kFp16;
    case CompressionKind::kBf16:
      return PsEncoding::kBf16;
    case CompressionKind::kTopK:
      return PsEncoding::kSparse;
    default:
      return PsEncoding::kFloat32;
  }
}

PsEncoding pullEncoding(const CompressionConfig& config) {
  return config.kind == CompressionKind::kFp16   ? PsEncoding::kFp16
         : config.kind == CompressionKind::kBf16 ? PsEncoding::kBf16
                                                 : PsEncoding::kFloat32;
}

int64_t encodedBytes(PsEncoding encoding, const float* values, int64_t count) {
  switch (encoding) {
    case PsEncoding::kFloat32:
      return count * 4;
    case PsEncoding::kFp16:
      return 4 + count * 2;
    case PsEncoding::kBf16:
      return count * 2;
    case PsEncoding::kSparse:
      return 4 + nonzeros(values, count) * 8;
  }
  return count * 4;
}

void encodeValues(PsEncoding encoding, const float* values, int64_t count, std::string& out) {
  const std::size_t start = out.size();
  switch (encoding) {
    case PsEncoding::kFloat32:
      out.append(reinterpret_cast<const char*>(values), static_cast<std::size_t>(count) * 4);
      return;
    case PsEncoding::kFp16: {
      const float scale = fp16Scale(largestMagnitude(values, count));
      append(out, scale);
      out.resize(start + 4 + static_cast<std::size_t>(count) * 2);
      auto* halves = reinterpret_cast<uint16_t*>(out.data() + start + 4);
      constexpr int64_t kChunk = 1024;
      float scaled[kChunk];
      for (int64_t at = 0; at < count; at += kChunk) {
        const int64_t n = std::min(kChunk, count - at);
        for (int64_t i = 0; i < n; ++i) scaled[i] = values[at + i] * scale;
        floatToHalf(HalfFormat::kFp16, scaled, halves + at, n);
      }
      return;
    }
    case PsEncoding::kBf16:
      out.resize(start + static_cast<std::size_t>(count) * 2);
      floatToHalf(HalfFormat::kBf16, values, reinterpret_cast<uint16_t*>(out.data() + start),
                  count);
      return;
    case PsEncoding::kSparse: {
      const auto n = static_cast<uint32_t>(nonzeros(values, count));
      append(out, n);
      for (int64_t i = 0; i < count; ++i)
        if (values[i] != 0.0f) append(out, static_cast<uint32_t>(i));
      for (int64_t i = 0; i < count; ++i)
        if (values[i] != 0.0f) append(out, values[i]);
      return;
    }
  }
}

void decodeValues(PsEncoding encoding, std::string_view bytes, float* out, int64_t count) {
  const auto n = static_cast<std::size_t>(count);
  switch (encoding) {
    case PsEncoding::kFloat32:
      expectSize(encoding, bytes, n * 4, count);
      std::memcpy(out, bytes.data(), n * 4);
      return;
    case PsEncoding::kFp16: {
      expectSize(encoding, bytes, 4 + n * 2, count);
      const auto scale = read<float>(bytes, 0);
      int exponent = 0;
      if (!(scale > 0.0f) || !std::isfinite(scale) || std::frexp(scale, &exponent) != 0.5f)
        throw Error("fp16 values: the scale " + std::to_string(scale) + " is not a power of two");
      std::vector<uint16_t> halves(n);
      std::memcpy(halves.data(), bytes.data() + 4, n * 2);
      halfToFloat(HalfFormat::kFp16, halves.data(), out, count);
      for (int64_t i = 0; i < count; ++i) out[i] /= scale;
      return;
    }
    case PsEncoding::kBf16: {
      expectSize(encoding, bytes, n * 2, count);
      std::vector<uint16_t> halves(n);
      std::memcpy(halves.data(), bytes.data(), n * 2);
      halfToFloat(HalfFormat::kBf16, halves.data(), out, count);
      return;
    }
    case PsEncoding::kSparse: {
      if (bytes.size() < 4) expectSize(encoding, bytes, 4, count);
      const auto entries = static_cast<std::size_t>(read<uint32_t>(bytes, 0));
      if (entries > n)
        throw Error("sparse values: " + std::to_string(entries) + " entries in a block of " +
                    std::to_string(count));
      expectSize(encoding, bytes, 4 + entries * 8, count);
      std::fill(out, out + count, 0.0f);
      int64_t previous = -1;
      for (std::size_t k = 0; k < entries; ++k) {
        const auto index = static_cast<int64_t>(read<uint32_t>(bytes, 4 + 4 * k));
        if (index >= count || index <= previous)
          throw Error("sparse values: entry " + std::to_string(k) + " has index " +
                      std::to_string(index) + (index >= count ? ", beyond" : ", out of order in") +
                      " a block of " + std::to_string(count));
        previous = index;
        out[index] = read<float>(bytes, 4 + 4 * entries + 4 * k);
      }
      return;
    }
  }
}

void roundTrip(PsEncoding encoding, float* values, int64_t count) {
  if (encoding == PsEncoding::kFloat32 || encoding == PsEncoding::kSparse) return;  // exact
  std::string bytes;
  encodeValues(encoding, values, count, bytes);
  decodeValues(encoding, bytes, values, count);
}

PushSparsifier::PushSparsifier(double ratio, int64_t count)
    : ratio_(ratio), error_(static_cast<std::size_t>(count), 0.0f) {}

void PushSparsifier::apply(float* gradient, const std::vector<GradientRange>& blocks) {
  for (const GradientRange& block : blocks) {
    float* g = gradient + block.begin;
    float* e = error_.data() + block.begin;
    const int64_t n = block.size();
    for (int64_t i = 0; i < n; ++i) g[i] += e[i];  // what there is to send
    selectTopK(g, n, topKCount(ratio_, n), magnitudes_, chosen_);
    // Kept: everything not sent.
    std::copy_n(g, n, e);
    std::fill_n(g, n, 0.0f);
    for (uint32_t i : chosen_) {
      g[i] = e[i];
      e[i] = 0.0f;
    }
  }
}

}  // namespace dtlab::core
