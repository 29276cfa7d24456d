#include "core/train/push_record.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "core/common/check.h"

namespace dtlab::core {

uint32_t gradientFingerprint(const float* values, int64_t count) {
  constexpr int64_t kSample = 4096;
  const int64_t stride = count > kSample ? count / kSample : 1;
  // FNV-1a's step on whole 32-bit words (the bits of each sampled element), and the count.
  uint32_t h = 2166136261u ^ static_cast<uint32_t>(count);
  for (int64_t i = 0; i < count; i += stride) {
    uint32_t bits = 0;
    std::memcpy(&bits, values + i, sizeof bits);
    h = (h ^ bits) * 16777619u;
    h ^= h >> 15;
  }
  return h == 0 ? 1 : h;
}

std::string versionList(const std::vector<int64_t>& versions) {
  std::string out;
  for (int64_t v : versions) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
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
  std::string text(const char* what, std::size_t length) {
    if (bytes_.size() - at_ < length) fail(what, "cut short");
    std::string out(reinterpret_cast<const char*>(bytes_.data() + at_), length);
    at_ += length;
    return out;
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

void PsRecordChunk::add(PsRecordChunk&& other) {
  pushes.insert(pushes.end(), std::make_move_iterator(other.pushes.begin()),
                std::make_move_iterator(other.pushes.end()));
  replicas.insert(replicas.end(), std::make_move_iterator(other.replicas.begin()),
                  std::make_move_iterator(other.replicas.end()));
  resets.insert(resets.end(), std::make_move_iterator(other.resets.begin()),
                std::make_move_iterator(other.resets.end()));
}

// The chunk: a format byte, then records, each a tag and its fields.
// The last tag is kEnd, so that a chunk cut between two records is refused, not taken whole.
enum Tag : unsigned char { kEnd = 0, kPush = 1, kReplica = 2, kReset = 3 };

PsRecordEncoder::PsRecordEncoder() {
  out_.push_back(kFormat);
}

void PsRecordEncoder::add(const PushRecord& p) {
  DTLAB_ENFORCE(p.basedOn.size() == p.appliedTo.size(), "a push record of ", p.appliedTo.size(),
                " blocks has ", p.basedOn.size(), " pulled versions");
  out_.push_back(kPush);
  putVarint(out_, static_cast<uint64_t>(p.worker));
  putVarint(out_, static_cast<uint64_t>(p.clock));
  putVarint(out_, p.appliedTo.size());
  if (previous_.size() < p.appliedTo.size()) previous_.resize(p.appliedTo.size(), 0);
  for (std::size_t b = 0; b < p.appliedTo.size(); ++b) {
    putSigned(out_, p.appliedTo[b] - previous_[b]);
    putVarint(out_, static_cast<uint64_t>(p.appliedTo[b] - p.basedOn[b]));
    previous_[b] = p.appliedTo[b];
  }
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<unsigned char>(p.gradient >> (8 * i)));
  ++pushes_;
}

void PsRecordEncoder::add(const ReplicaRecord& r) {
  out_.push_back(kReplica);
  putVarint(out_, static_cast<uint64_t>(r.worker));
  putSigned(out_, r.phase);
  putVarint(out_, r.versions.size());
  for (int64_t v : r.versions) putVarint(out_, static_cast<uint64_t>(v));
  putVarint(out_, r.checksum.size());
  out_.insert(out_.end(), r.checksum.begin(), r.checksum.end());
  ++others_;
}

void PsRecordEncoder::add(const ResetRecord& r) {
  out_.push_back(kReset);
  putVarint(out_, static_cast<uint64_t>(r.version));
  putVarint(out_, static_cast<uint64_t>(r.epoch));
  putVarint(out_, r.params.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(r.params.data());
  out_.insert(out_.end(), bytes, bytes + r.params.size() * sizeof(float));
  ++others_;
}

std::vector<unsigned char> PsRecordEncoder::take() {
  out_.push_back(kEnd);
  std::vector<unsigned char> chunk;
  chunk.swap(out_);
  out_.push_back(kFormat);
  previous_.clear();
  pushes_ = 0;
  others_ = 0;
  return chunk;
}

std::vector<unsigned char> encodePsRecords(const PsRecordChunk& chunk) {
  PsRecordEncoder encoder;
  for (const PushRecord& p : chunk.pushes) encoder.add(p);
  for (const ReplicaRecord& r : chunk.replicas) encoder.add(r);
  for (const ResetRecord& r : chunk.resets) encoder.add(r);
  return encoder.take();
}

PsRecordChunk decodePsRecords(std::span<const unsigned char> bytes) {
  Reader in(bytes);
  const unsigned char format = in.byte("format");
  if (format != kFormat)
    in.fail("format", "version " + std::to_string(format) + ", this program reads " +
                          std::to_string(kFormat));
  PsRecordChunk chunk;
  std::vector<int64_t> previous;
  for (;;) {
    const unsigned char tag = in.byte("record tag");
    if (tag == kEnd) break;
    if (tag == kPush) {
      PushRecord p;
      p.worker = static_cast<int>(in.bounded("worker", kMaxWorkers));
      p.clock = static_cast<int64_t>(in.varint("clock"));
      const auto blocks = static_cast<std::size_t>(in.bounded("block count", kMaxBlocks));
      if (previous.size() < blocks) previous.resize(blocks, 0);
      p.appliedTo.resize(blocks);
      p.basedOn.resize(blocks);
      for (std::size_t b = 0; b < blocks; ++b) {
        const int64_t step = in.signedVarint("applied version");
        p.appliedTo[b] =
            static_cast<int64_t>(static_cast<uint64_t>(previous[b]) + static_cast<uint64_t>(step));
        const auto stale = static_cast<int64_t>(in.varint("staleness"));
        if (p.appliedTo[b] < 0 || stale < 0 || stale > p.appliedTo[b])
          in.fail("applied version", "negative, or older than the version it was computed from");
        p.basedOn[b] = p.appliedTo[b] - stale;
        previous[b] = p.appliedTo[b];
      }
      p.gradient = in.u32("gradient fingerprint");
      chunk.pushes.push_back(std::move(p));
    } else if (tag == kReplica) {
      ReplicaRecord r;
      r.worker = static_cast<int>(in.bounded("replica worker", kMaxWorkers));
      r.phase = in.signedVarint("replica phase");
      const auto blocks = static_cast<std::size_t>(in.bounded("replica block count", kMaxBlocks));
      r.versions.resize(blocks);
      for (std::size_t b = 0; b < blocks; ++b)
        r.versions[b] = static_cast<int64_t>(in.bounded("version", INT64_MAX));
      const auto length = static_cast<std::size_t>(in.bounded("checksum length", 64));
      r.checksum = in.text("checksum", length);
      chunk.replicas.push_back(std::move(r));
    } else if (tag == kReset) {
      ResetRecord r;
      r.version = in.bounded("reset version", INT64_MAX);
      r.epoch = in.bounded("reset epoch", INT64_MAX);
      const auto count =
          static_cast<std::size_t>(in.bounded("reset parameter count", bytes.size() / 4));
      const std::string raw = in.text("reset parameters", count * sizeof(float));
      r.params.resize(count);
      if (count > 0) std::memcpy(r.params.data(), raw.data(), raw.size());
      chunk.resets.push_back(std::move(r));
    } else {
      in.fail("record tag", "unknown tag " + std::to_string(tag));
    }
  }
  if (!in.done()) in.fail("end", "bytes after the end mark");
  return chunk;
}

int64_t pushStaleness(const PushRecord& push) {
  int64_t staleness = 0;
  for (std::size_t b = 0; b < push.appliedTo.size() && b < push.basedOn.size(); ++b)
    staleness = std::max(staleness, push.appliedTo[b] - push.basedOn[b]);
  return staleness;
}

}  // namespace dtlab::core
