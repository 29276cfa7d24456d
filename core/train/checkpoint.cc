#include "core/train/checkpoint.h"

#include <bit>
#include <cstring>

namespace dtlab::core {
namespace {

constexpr char kMagic[8] = {'D', 'T', 'L', 'C', 'K', 'P', 'T', '1'};
constexpr int kFormat = 1;
// A header is small; anything near this is damage, not a checkpoint.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

static_assert(std::endian::native == std::endian::little,
              "checkpoints are little-endian; add byte swapping for this platform");

uint64_t fnv1a(const unsigned char* data, std::size_t size) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

void append(std::vector<unsigned char>& out, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  out.insert(out.end(), p, p + bytes);
}

void appendFloats(std::vector<unsigned char>& out, const std::vector<float>& values) {
  append(out, values.data(), values.size() * sizeof(float));
}

// Reads what encodeCheckpoint wrote, bounds-checked.
class Reader {
 public:
  explicit Reader(std::span<const unsigned char> bytes) : bytes_(bytes) {}
  const unsigned char* take(std::size_t n, const char* what) {
    if (n > bytes_.size() - at_)
      throw CheckpointError(std::string("damaged checkpoint: it ends inside its ") + what);
    const unsigned char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  uint64_t u64(const char* what) {
    uint64_t v;
    std::memcpy(&v, take(8, what), 8);
    return v;
  }
  std::vector<float> floats(uint64_t count, const char* what) {
    if (count > (bytes_.size() - at_) / sizeof(float))
      throw CheckpointError(std::string("damaged checkpoint: it ends inside its ") + what);
    std::vector<float> v(static_cast<std::size_t>(count));
    std::memcpy(v.data(), take(v.size() * sizeof(float), what), v.size() * sizeof(float));
    return v;
  }
  std::size_t at() const { return at_; }

 private:
  std::span<const unsigned char> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

void checkCheckpointFits(const Checkpoint& c, std::string_view optimizer, int64_t parameterCount) {
  if (c.optimizer != optimizer)
    throw Error("the checkpoint's optimizer is " + c.optimizer + ", this run's " +
                std::string(optimizer));
  if (static_cast<int64_t>(c.params.size()) != parameterCount)
    throw Error("the checkpoint holds " + std::to_string(c.params.size()) +
                " parameters, this model has " + std::to_string(parameterCount));
}

std::vector<unsigned char> encodeCheckpoint(const Checkpoint& c) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const std::vector<float>& s : c.optimizerState) sizes.push_back(s.size());
  nlohmann::json fields =
      nlohmann::json{{"format", kFormat},        {"step", c.step},
                     {"wall_ms", c.wallMs},      {"strategy", c.strategy},
                     {"optimizer", c.optimizer}, {"params", c.params.size()},
                     {"optimizer_state", sizes}, {"strategy_state", c.strategyState}};
  if (!c.rankSteps.empty()) fields["rank_steps"] = c.rankSteps;
  const std::string header = fields.dump();
  std::vector<unsigned char> out;
  append(out, kMagic, sizeof kMagic);
  const uint64_t headerBytes = header.size();
  append(out, &headerBytes, 8);
  append(out, header.data(), header.size());
  appendFloats(out, c.params);
  for (const std::vector<float>& s : c.optimizerState) appendFloats(out, s);
  const uint64_t hash = fnv1a(out.data(), out.size());
  append(out, &hash, 8);
  return out;
}

Checkpoint decodeCheckpoint(std::span<const unsigned char> bytes) {
  if (bytes.size() < sizeof kMagic + 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw CheckpointError("not a DTLab checkpoint (no DTLCKPT1 header)");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (fnv1a(bytes.data(), bytes.size() - 8) != stored)
    throw CheckpointError("damaged checkpoint: its checksum does not match its bytes");
  Reader r(bytes.first(bytes.size() - 8));
  r.take(sizeof kMagic, "header");
  const uint64_t headerBytes = r.u64("header");
  if (headerBytes > kMaxHeaderBytes) throw CheckpointError("damaged checkpoint: header size");
  const auto* text = reinterpret_cast<const char*>(r.take(headerBytes, "header"));
  Checkpoint c;
  try {
    const nlohmann::json h = nlohmann::json::parse(text, text + headerBytes);
    if (h.at("format").get<int>() != kFormat)
      throw CheckpointError("checkpoint format " + h.at("format").dump() +
                            " is not one this DTLab reads (" + std::to_string(kFormat) + ")");
    c.step = h.at("step").get<int64_t>();
    c.wallMs = h.at("wall_ms").get<double>();
    c.strategy = h.at("strategy").get<std::string>();
    c.optimizer = h.at("optimizer").get<std::string>();
    c.strategyState = h.at("strategy_state");
    if (h.contains("rank_steps")) c.rankSteps = h.at("rank_steps").get<std::vector<int64_t>>();
    c.params = r.floats(h.at("params").get<uint64_t>(), "parameters");
    for (const nlohmann::json& size : h.at("optimizer_state"))
      c.optimizerState.push_back(r.floats(size.get<uint64_t>(), "optimizer state"));
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("damaged checkpoint header: ") + e.what());
  }
  if (r.at() != bytes.size() - 8)
    throw CheckpointError("damaged checkpoint: bytes after its last array");
  if (c.step < 0) throw CheckpointError("damaged checkpoint: negative step");
  for (int64_t s : c.rankSteps)
    if (s < 0) throw CheckpointError("damaged checkpoint: a rank's negative step");
  return c;
}

}  // namespace dtlab::core
