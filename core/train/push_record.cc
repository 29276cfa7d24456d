#include "core/train/push_record.h"

#include <cstring>
#include <string>

#include "core/common/check.h"

namespace dtlab::core {

uint32_t gradientFingerprint(const float* values, int64_t count) {
  constexpr int64_t kSample = 4096;
  const int64_t stride = count > kSample ? count / kSample : 1;
  // FNV-1a (32-bit) over the sampled elements' bits and the count.
  uint32_t h = 2166136261u;
  auto mix = [&h](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      h ^= static_cast<uint32_t>((v >> (8 * i)) & 0xff);
      h *= 16777619u;
    }
  };
  mix(static_cast<uint64_t>(count), 8);
  for (int64_t i = 0; i < count; i += stride) {
    uint32_t bits = 0;
    std::memcpy(&bits, values + i, sizeof bits);
    mix(bits, 4);
  }
  return h == 0 ? 1 : h;
}

namespace {

constexpr unsigned char kFormat = 1;

void putVarint(std::vector<unsigned char>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<unsigned char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<unsigned char>(v));
}

void putSigned(std::vector<unsigned char>& out, int64_t v) {
  putVarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

class Reader {
 public:
  explicit Reader(std::span<const unsigned char> bytes) : bytes_(bytes) {}
  uint64_t varint(const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) fail(what, "cut short");
      const unsigned char b = bytes_[at_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail(what, "a varint longer than 64 bits");
  }
  int64_t signedVarint(const char* what) {
    const uint64_t z = varint(what);
    return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
  }
  // A count or index that must not exceed `limit`.
  int64_t bounded(const char* what, uint64_t limit) {
    const uint64_t v = varint(what);
    if (v > limit) fail(what, std::to_string(v) + " is more than " + std::to_string(limit));
    return static_cast<int64_t>(v);
  }
  uint32_t u32(const char* what) {
    if (bytes_.size() - at_ < 4) fail(what, "cut short");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(bytes_[at_++]) << (8 * i);
    return v;
  }
  unsigned char byte(const char* what) {
    if (at_ >= bytes_.size()) fail(what, "cut short");
    return bytes_[at_++];
  }
  bool done() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail(const char* what, const std::string& why) const {
    throw Error("parameter-server record: " + std::string(what) + " at byte " +
                std::to_string(at_) + ": " + why);
  }

 private:
  std::span<const unsigned char> bytes_;
  std::size_t at_ = 0;
};

// Bounds a decoder trusts: far above any run DTLab makes, far below what would exhaust memory.
constexpr uint64_t kMaxBlocks = 1 << 16;
constexpr uint64_t kMaxWorkers = 1 << 20;

}  // namespace

std::vector<unsigned char> encodePsRecords(const PsRecordChunk& chunk) {
  std::vector<unsigned char> out;
  out.reserve(8 + chunk.pushes.size() * 24);
  out.push_back(kFormat);
  putVarint(out, chunk.pushes.size());
  std::vector<int64_t> previous;  // the chunk's previous push's appliedTo, per block
  for (const PushRecord& p : chunk.pushes) {
    DTLAB_ENFORCE(p.basedOn.size() == p.appliedTo.size(), "a push record of ", p.appliedTo.size(),
                  " blocks has ", p.basedOn.size(), " pulled versions");
    putVarint(out, static_cast<uint64_t>(p.worker));
    putVarint(out, static_cast<uint64_t>(p.clock));
    putVarint(out, p.appliedTo.size());
    previous.resize(std::max(previous.size(), p.appliedTo.size()), 0);
    for (std::size_t b = 0; b < p.appliedTo.size(); ++b) {
      putSigned(out, p.appliedTo[b] - previous[b]);
      putVarint(out, static_cast<uint64_t>(p.appliedTo[b] - p.basedOn[b]));
      previous[b] = p.appliedTo[b];
    }
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(p.gradient >> (8 * i)));
  }
  putVarint(out, chunk.replicas.size());
  for (const ReplicaRecord& r : chunk.replicas) {
    putVarint(out, static_cast<uint64_t>(r.worker));
    putVarint(out, r.versions.size());
    for (int64_t v : r.versions) putVarint(out, static_cast<uint64_t>(v));
  }
  return out;
}

PsRecordChunk decodePsRecords(std::span<const unsigned char> bytes) {
  Reader in(bytes);
  const unsigned char format = in.byte("format");
  if (format != kFormat)
    in.fail("format", "version " + std::to_string(format) + ", this program reads " +
                          std::to_string(kFormat));
  PsRecordChunk chunk;
  const int64_t pushes = in.bounded("push count", bytes.size());
  chunk.pushes.reserve(static_cast<std::size_t>(pushes));
  std::vector<int64_t> previous;
  for (int64_t i = 0; i < pushes; ++i) {
    PushRecord p;
    p.worker = static_cast<int>(in.bounded("worker", kMaxWorkers));
    p.clock = static_cast<int64_t>(in.varint("clock"));
    const auto blocks = static_cast<std::size_t>(in.bounded("block count", kMaxBlocks));
    previous.resize(std::max(previous.size(), blocks), 0);
    p.appliedTo.resize(blocks);
    p.basedOn.resize(blocks);
    for (std::size_t b = 0; b < blocks; ++b) {
      const int64_t step = in.signedVarint("applied version");
      p.appliedTo[b] =
          static_cast<int64_t>(static_cast<uint64_t>(previous[b]) + static_cast<uint64_t>(step));
      const auto stale = static_cast<int64_t>(in.varint("staleness"));
      if (p.appliedTo[b] < 0 || stale > p.appliedTo[b])
        in.fail("applied version", "negative, or older than the version it was computed from");
      p.basedOn[b] = p.appliedTo[b] - stale;
      previous[b] = p.appliedTo[b];
    }
    p.gradient = in.u32("gradient fingerprint");
    chunk.pushes.push_back(std::move(p));
  }
  const int64_t replicas = in.bounded("replica count", bytes.size());
  for (int64_t i = 0; i < replicas; ++i) {
    ReplicaRecord r;
    r.worker = static_cast<int>(in.bounded("replica worker", kMaxWorkers));
    const auto blocks = static_cast<std::size_t>(in.bounded("replica block count", kMaxBlocks));
    r.versions.resize(blocks);
    for (std::size_t b = 0; b < blocks; ++b)
      r.versions[b] = static_cast<int64_t>(in.varint("version"));
    chunk.replicas.push_back(std::move(r));
  }
  if (!in.done()) in.fail("end", "bytes left over");
  return chunk;
}

}  // namespace dtlab::core
