#include "core/store/checkpoint_parts.h"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cstdio>

#include "core/common/checksum.h"
#include "core/train/checkpoint.h"

namespace dtlab::core {
namespace {

constexpr int kManifestFormat = 1;

// SQLite integers are signed: a checksum is stored with the same 64 bits.
int64_t asStored(uint64_t checksum) {
  return std::bit_cast<int64_t>(checksum);
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string byteRange(uint64_t begin, uint64_t size) {
  return "bytes " + std::to_string(begin) + "-" + std::to_string(begin + size - 1);
}

// A read transaction, unless the caller is in one: the row and its parts as one commit left
// them, even while a recorder prunes.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(sqlite::Db& db) : db_(db), began_(sqlite3_get_autocommit(db.handle())) {
    if (began_) db_.exec("BEGIN");
  }
  ~ReadSnapshot() {
    if (began_) sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr);
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite::Db& db_;
  bool began_;
};

}  // namespace

StoredCheckpointParts splitCheckpoint(std::span<const unsigned char> encoded) {
  StoredCheckpointParts out;
  nlohmann::json parts = nlohmann::json::array();
  for (std::size_t at = 0; at < encoded.size(); at += kCheckpointPartBytes) {
    const std::span<const unsigned char> part =
        encoded.subspan(at, std::min(kCheckpointPartBytes, encoded.size() - at));
    out.parts.push_back(part);
    out.checksums.push_back(checksum64(part));
    parts.push_back({{"bytes", part.size()}, {"checksum", hex(out.checksums.back())}});
  }
  out.manifest = {{"format", kManifestFormat},
                  {"bytes", encoded.size()},
                  {"part_bytes", kCheckpointPartBytes},
                  {"parts", parts}};
  try {
    const CheckpointLayout layout = describeCheckpoint(encoded);
    nlohmann::json tensors = nlohmann::json::array();
    for (const CheckpointTensor& t : layout.tensors)
      tensors.push_back(
          {{"name", t.name},
           {"floats", t.floats},
           {"offset", t.offset},
           {"checksum", hex(checksum64(encoded.subspan(t.offset, t.floats * sizeof(float))))}});
    out.manifest["step"] = layout.step;
    if (!layout.rankSteps.empty()) out.manifest["rank_steps"] = layout.rankSteps;
    out.manifest["strategy"] = layout.strategy;
    out.manifest["optimizer"] = layout.optimizer;
    out.manifest["tensors"] = tensors;
  } catch (const CheckpointError& e) {
    out.manifest["unreadable"] = e.what();  // kept as it came; decoding will refuse it
  }
  return out;
}

std::optional<std::vector<unsigned char>> readCheckpointParts(sqlite::Db& db, int64_t runId,
                                                              int64_t step) {
  const ReadSnapshot snapshot(db);
  sqlite::Statement row(db,
                        "SELECT bytes, manifest FROM checkpoints WHERE run_id = ? AND step = ?");
  row.bind(1, runId).bind(2, step);
  if (!row.step()) return std::nullopt;
  const int64_t bytes = row.columnInt(0);
  const std::string of =
      "the checkpoint of step " + std::to_string(step) + " of run " + std::to_string(runId);
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(row.columnText(1));
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointDamaged(of + " is damaged: its manifest cannot be read (" + e.what() + ")",
                            step, std::nullopt);
  }
  const std::size_t expected =
      manifest.contains("parts") && manifest["parts"].is_array() ? manifest["parts"].size() : 0;
  std::vector<unsigned char> out;
  out.reserve(static_cast<std::size_t>(std::max<int64_t>(bytes, 0)));
  sqlite::Statement parts(db,
                          "SELECT part, checksum, data FROM checkpoint_parts WHERE run_id = ? AND "
                          "step = ? ORDER BY part");
  parts.bind(1, runId).bind(2, step);
  std::size_t next = 0;
  auto name = [&](std::size_t part) {
    return "part " + std::to_string(part + 1) + " of " + std::to_string(expected);
  };
  while (parts.step()) {
    const auto part = static_cast<std::size_t>(parts.columnInt(0));
    if (part != next)
      throw CheckpointDamaged(of + " is damaged: " + name(next) + " (" +
                                  byteRange(out.size(), kCheckpointPartBytes) + ") is missing",
                              step, std::nullopt);
    const std::span<const unsigned char> data = parts.columnBlob(2);
    if (asStored(checksum64(data)) != parts.columnInt(1))
      throw CheckpointDamaged(of + " is damaged: " + name(part) + " (" +
                                  byteRange(out.size(), data.size()) +
                                  ") does not match its checksum",
                              step, std::nullopt);
    out.insert(out.end(), data.begin(), data.end());
    ++next;
  }
  if (next != expected || static_cast<int64_t>(out.size()) != bytes)
    throw CheckpointDamaged(of + " is damaged: it has " + std::to_string(next) + " of its " +
                                std::to_string(expected) + " parts (" + std::to_string(out.size()) +
                                " of " + std::to_string(bytes) + " bytes)",
                            step, std::nullopt);
  return out;
}

void writeCheckpointParts(sqlite::Db& db, int64_t runId, int64_t step, double wallMs,
                          int64_t createdMs, std::span<const unsigned char> encoded) {
  StoredCheckpointParts split = splitCheckpoint(encoded);
  // The spec the run was recorded with, as stored: a checkpoint copied into another run, or a
  // spec edited by hand since, shows in the manifest.
  sqlite::Statement spec(db, "SELECT spec FROM runs WHERE id = ?");
  spec.bind(1, runId);
  if (spec.step() && !spec.isNull(0)) {
    const std::string text = spec.columnText(0);
    split.manifest["spec_hash"] =
        hex(checksum64({reinterpret_cast<const unsigned char*>(text.data()), text.size()}));
  }
  spec.reset();
  // Deleting the row deletes its parts (ON DELETE CASCADE); REPLACE would not say so.
  sqlite::Statement drop(db, "DELETE FROM checkpoints WHERE run_id = ? AND step = ?");
  drop.bind(1, runId).bind(2, step).run();
  sqlite::Statement row(db,
                        "INSERT INTO checkpoints(run_id, step, wall_ms, created_ms, bytes, "
                        "manifest) VALUES (?, ?, ?, ?, ?, ?)");
  row.bind(1, runId).bind(2, step).bind(3, wallMs).bind(4, createdMs);
  // Names read from a damaged old checkpoint may not be UTF-8: replaced in the manifest (it
  // describes; the parts keep the bytes as they came).
  const std::string manifest =
      split.manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  row.bind(5, static_cast<int64_t>(encoded.size())).bind(6, manifest).run();
  sqlite::Statement part(db,
                         "INSERT INTO checkpoint_parts(run_id, step, part, checksum, data) "
                         "VALUES (?, ?, ?, ?, ?)");
  for (std::size_t i = 0; i < split.parts.size(); ++i) {
    part.bind(1, runId).bind(2, step).bind(3, static_cast<int64_t>(i));
    part.bind(4, asStored(split.checksums[i])).bindBlob(5, split.parts[i]).run();
  }
}

}  // namespace dtlab::core
