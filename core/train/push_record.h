#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

// The parameter server's record of a run (issue 23): which update it applied where, so that a
// replay (ps_replay.h) can apply the same updates in the same order to the same versions.

namespace dtlab::core {

// One push the server applied: worker `worker`'s push number `clock` (1, 2, ...), a gradient
// computed from every block b at the version the worker had pulled (basedOn[b]) and applied to
// block b when it was at version appliedTo[b] (each block applies one push a version, so its
// appliedTo values, 0, 1, 2, ..., are its order of pushes).
struct PushRecord {
  int worker = 0;
  int64_t clock = 0;
  std::vector<int64_t> basedOn;
  std::vector<int64_t> appliedTo;
  // gradientFingerprint() of the gradient pushed (0: not taken, e.g. a GPU replica's): where a
  // replay's gradient first differs from the recorded one, the replay diverged.
  uint32_t gradient = 0;
};

// A worker's replica as it pulled it from the blocks at `versions`, and the checksum
// (paramChecksum) the worker took of it: at the end of the run (phase -1; the parameters of
// its param_checksum, rank 0's last pull being its final evaluation's) and, in a hybrid run, at
// the end of each asynchronous phase (phase >= 0). A replay checks each.
struct ReplicaRecord {
  int worker = 0;
  int64_t phase = -1;
  std::vector<int64_t> versions;
  std::string checksum;
};

// A hybrid run's switch to asynchronous training: every block reset to the synchronous
// replica's parameters (all ranks hold the same) at `version` in `epoch`
// (ParameterBlock::reset; the optimizer state stays). Recorded by rank 0.
struct ResetRecord {
  int64_t version = 0;
  int64_t epoch = 0;
  std::vector<float> params;
};

// A hash of `count` floats of a gradient, bit for bit, from at most 4096 of them spread evenly
// (a gradient computed from other weights differs in nearly every element, so a sample finds
// it; hashing the whole of a large model's gradient every push would cost more than the
// record is allowed to). Host memory only.
uint32_t gradientFingerprint(const float* values, int64_t count);

// Block versions as a replay prints them: "12,12,13,12".
std::string versionList(const std::vector<int64_t>& versions);
// A push's staleness: the most versions any block moved between its pull and its push.
int64_t pushStaleness(const PushRecord& push);

// Records as the store and the node's stream keep them: one chunk of records, each a tag and
// its fields, then an end mark, compact (varints: per push its worker, clock and per block the
// version it was applied to, as a step from the chunk's previous push's, and its staleness; the
// fingerprint in 4 bytes): about 15 bytes a push of a four-block server.
struct PsRecordChunk {
  std::vector<PushRecord> pushes;
  std::vector<ReplicaRecord> replicas;
  std::vector<ResetRecord> resets;  // the parameters as raw float32
  bool empty() const { return pushes.empty() && replicas.empty() && resets.empty(); }
  // Appends another chunk's records.
  void add(PsRecordChunk&& other);
};
std::vector<unsigned char> encodePsRecords(const PsRecordChunk& chunk);

// Encodes records one at a time into the chunk take() hands over (a worker's node and the
// store append as they come, holding bytes, not records).
class PsRecordEncoder {
 public:
  PsRecordEncoder();
  void add(const PushRecord& push);
  void add(const ReplicaRecord& replica);
  void add(const ResetRecord& reset);
  std::size_t pushes() const { return pushes_; }
  bool empty() const { return pushes_ == 0 && others_ == 0; }
  // The chunk so far; the encoder starts the next one.
  std::vector<unsigned char> take();

 private:
  std::vector<unsigned char> out_;
  std::vector<int64_t> previous_;  // the chunk's previous push's appliedTo, per block
  std::size_t pushes_ = 0;
  std::size_t others_ = 0;
};
// Throws dtlab::Error naming what is malformed (a cut or foreign chunk).
PsRecordChunk decodePsRecords(std::span<const unsigned char> bytes);

}  // namespace dtlab::core
