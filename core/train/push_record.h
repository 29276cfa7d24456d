#pragma once

#include <cstdint>
#include <span>
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

// The versions of the blocks a worker's replica last pulled when it finished: the parameters
// its final checksum was taken of (rank 0's last pull being its final evaluation's).
struct ReplicaRecord {
  int worker = 0;
  std::vector<int64_t> versions;
};

// A hash of `count` floats of a gradient, bit for bit, from at most 4096 of them spread evenly
// (a gradient computed from other weights differs in nearly every element, so a sample finds
// it; hashing the whole of a large model's gradient every push would cost more than the
// record is allowed to). Host memory only.
uint32_t gradientFingerprint(const float* values, int64_t count);

// Records as the store and the node's stream keep them: one chunk of pushes and replicas,
// compact (varints: per push its worker, clock and per block the version it was applied to, as
// a step from the chunk's previous push's, and its staleness; the fingerprint in 4 bytes):
// about 20 bytes a push of a four-block server.
struct PsRecordChunk {
  std::vector<PushRecord> pushes;
  std::vector<ReplicaRecord> replicas;
  bool empty() const { return pushes.empty() && replicas.empty(); }
};
std::vector<unsigned char> encodePsRecords(const PsRecordChunk& chunk);
// Throws dtlab::Error naming what is malformed (a cut or foreign chunk).
PsRecordChunk decodePsRecords(std::span<const unsigned char> bytes);

}  // namespace dtlab::core
