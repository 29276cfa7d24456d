#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dtlab::remote {

// A blob whose size grows with the model (an encoded checkpoint, a chunk of push records)
// travels in parts, never as one message (remote/proto/dtlab.proto: BlobPart, CheckpointPart).
// These two halves are the rule both ends follow: parts in order, offsets from 0, one total.

// Checkpoints waiting to travel (on a node) or for the step points they follow (on the
// coordinator) queue up to this many bytes, older ones dropped first; the newest always
// stays. A fast run of a small model keeps every checkpoint it took; a model larger than this
// keeps the newest, as the run's retention would.
inline constexpr std::size_t kQueuedCheckpointBytes = std::size_t{64} << 20;

// Calls `part(offset, bytes)` for consecutive pieces of `blob`, each at most `partBytes` long
// (one empty piece for an empty blob).
void forEachPart(std::span<const unsigned char> blob, std::size_t partBytes,
                 const std::function<void(uint64_t offset, std::span<const unsigned char>)>& part);

// Joins the parts of one blob after another. A part at offset 0 starts a new blob (one left
// unfinished is dropped: a sender that replaced it); any other part must continue the blob
// being joined with the same total, or add() says what is wrong and the blob is dropped.
class BlobJoiner {
 public:
  // `maxBytes`: the largest total accepted (a part announcing more is refused, naming both).
  explicit BlobJoiner(uint64_t maxBytes = UINT64_MAX) : maxBytes_(maxBytes) {}

  // "" when the part fits; then whole() says whether the blob is complete.
  std::string add(uint64_t total, uint64_t offset, std::string_view data);
  bool whole() const { return joining_ && bytes_.size() == total_; }
  // Hands over the whole blob and starts afresh.
  std::vector<unsigned char> take();
  // Bytes joined so far of the blob being joined.
  std::size_t joined() const { return bytes_.size(); }

 private:
  uint64_t maxBytes_;
  bool joining_ = false;
  uint64_t total_ = 0;
  std::vector<unsigned char> bytes_;
};

}  // namespace dtlab::remote
