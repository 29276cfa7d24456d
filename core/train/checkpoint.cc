#include "core/train/checkpoint.h"

#include <bit>
#include <cstring>

#include "core/common/checksum.h"

namespace dtlab::core {
namespace {

// Format 2 closes with checksum64; format 1 (read, no longer written) with a byte-wise FNV-1a,
// ten times slower on a model of hundreds of MB.
constexpr char kMagic[8] = {'D', 'T', 'L', 'C', 'K', 'P', 'T', '2'};
constexpr char kMagicV1[8] = {'D', 'T', 'L', 'C', 'K', 'P', 'T', '1'};
constexpr int kFormat = 2;
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
  std::size_t floats = c.params.size();
  for (const std::vector<float>& s : c.optimizerState) floats += s.size();
  std::vector<unsigned char> out;
  out.reserve(sizeof kMagic + 8 + header.size() + floats * sizeof(float) + 8);  // one allocation
  append(out, kMagic, sizeof kMagic);
  const uint64_t headerBytes = header.size();
  append(out, &headerBytes, 8);
  append(out, header.data(), header.size());
  appendFloats(out, c.params);
  for (const std::vector<float>& s : c.optimizerState) appendFloats(out, s);
  const uint64_t hash = checksum64(out);
  append(out, &hash, 8);
  return out;
}

namespace {

// The format (1 or 2) named by the magic; throws CheckpointError for anything else.
int formatOf(std::span<const unsigned char> bytes) {
  if (bytes.size() >= sizeof kMagic + 16) {
    if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) return kFormat;
    if (std::memcmp(bytes.data(), kMagicV1, sizeof kMagicV1) == 0) return 1;
  }
  throw CheckpointError("not a DTLab checkpoint (no DTLCKPT header)");
}

// Throws CheckpointError unless the closing checksum matches everything before it.
void checkChecksum(std::span<const unsigned char> bytes, int format) {
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  const std::span<const unsigned char> body = bytes.first(bytes.size() - 8);
  if ((format == 1 ? fnv1a(body.data(), body.size()) : checksum64(body)) != stored)
    throw CheckpointError("damaged checkpoint: its checksum does not match its bytes");
}

// The JSON header, read after the magic; `r` is left at the first array.
nlohmann::json readHeader(Reader& r, int format) {
  r.take(sizeof kMagic, "header");
  const uint64_t headerBytes = r.u64("header");
  if (headerBytes > kMaxHeaderBytes) throw CheckpointError("damaged checkpoint: header size");
  const auto* text = reinterpret_cast<const char*>(r.take(headerBytes, "header"));
  try {
    nlohmann::json h = nlohmann::json::parse(text, text + headerBytes);
    if (h.at("format").get<int>() != format)
      throw CheckpointError("checkpoint format " + h.at("format").dump() +
                            " is not one this DTLab reads (1 or " + std::to_string(kFormat) + ")");
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("damaged checkpoint header: ") + e.what());
  }
}

}  // namespace

CheckpointLayout describeCheckpoint(std::span<const unsigned char> bytes) {
  const int format = formatOf(bytes);
  Reader r(bytes.first(bytes.size() - 8));
  const nlohmann::json h = readHeader(r, format);
  CheckpointLayout layout;
  try {
    layout.step = h.at("step").get<int64_t>();
    layout.wallMs = h.at("wall_ms").get<double>();
    layout.strategy = h.at("strategy").get<std::string>();
    layout.optimizer = h.at("optimizer").get<std::string>();
    layout.strategyState = h.at("strategy_state");
    if (h.contains("rank_steps")) layout.rankSteps = h.at("rank_steps").get<std::vector<int64_t>>();
    uint64_t at = r.at();
    auto add = [&](std::string name, uint64_t floats) {
      if (floats > bytes.size() / sizeof(float))
        throw CheckpointError("damaged checkpoint: " + name + " larger than its bytes");
      layout.tensors.push_back({std::move(name), floats, at});
      at += floats * sizeof(float);
    };
    add("params", h.at("params").get<uint64_t>());
    int i = 0;
    for (const nlohmann::json& size : h.at("optimizer_state"))
      add("optimizer_state." + std::to_string(i++), size.get<uint64_t>());
    if (at != bytes.size() - 8)
      throw CheckpointError("damaged checkpoint: its arrays do not end where its bytes do");
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("damaged checkpoint header: ") + e.what());
  }
  if (layout.step < 0) throw CheckpointError("damaged checkpoint: negative step");
  for (int64_t s : layout.rankSteps)
    if (s < 0) throw CheckpointError("damaged checkpoint: a rank's negative step");
  return layout;
}

CheckpointLayout verifyCheckpoint(std::span<const unsigned char> bytes) {
  checkChecksum(bytes, formatOf(bytes));
  return describeCheckpoint(bytes);
}

Checkpoint decodeCheckpoint(std::span<const unsigned char> bytes) {
  CheckpointLayout layout = verifyCheckpoint(bytes);  // every array within the bytes
  const auto floatsOf = [&](const CheckpointTensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.floats));
    std::memcpy(v.data(), bytes.data() + t.offset, v.size() * sizeof(float));
    return v;
  };
  Checkpoint c;
  c.step = layout.step;
  c.wallMs = layout.wallMs;
  c.strategy = std::move(layout.strategy);
  c.optimizer = std::move(layout.optimizer);
  c.rankSteps = std::move(layout.rankSteps);
  c.strategyState = std::move(layout.strategyState);
  c.params = floatsOf(layout.tensors.front());
  for (std::size_t t = 1; t < layout.tensors.size(); ++t)
    c.optimizerState.push_back(floatsOf(layout.tensors[t]));
  return c;
}

}  // namespace dtlab::core
