#include "core/common/checksum.h"

#include <bit>
#include <cstring>

namespace dtlab::core {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

uint64_t word(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

uint64_t round(uint64_t lane, uint64_t input) {
  return std::rotl(lane + input * kPrime2, 31) * kPrime1;
}

}  // namespace

uint64_t checksum64(std::span<const unsigned char> bytes) {
  const unsigned char* p = bytes.data();
  std::size_t left = bytes.size();
  uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  for (; left >= 32; p += 32, left -= 32)
    for (int i = 0; i < 4; ++i) lanes[i] = round(lanes[i], word(p + 8 * i));
  uint64_t h = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
               std::rotl(lanes[3], 18);
  h += bytes.size();
  for (; left >= 8; p += 8, left -= 8) h = std::rotl(h ^ round(0, word(p)), 27) * kPrime1 + kPrime3;
  for (; left > 0; ++p, --left) h = std::rotl(h ^ (*p * kPrime3), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

}  // namespace dtlab::core
