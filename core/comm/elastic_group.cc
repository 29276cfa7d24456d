#include "core/comm/elastic_group.h"

#include <algorithm>
#include <numeric>

#include "core/common/log.h"

namespace dtlab::core {

ElasticGroup::ElasticGroup(Communicator& first, int rank, int world, GroupRecovery& recovery)
    : current_(&first), recovery_(recovery), originalRank_(rank), members_(world) {
  std::iota(members_.begin(), members_.end(), 0);
}

ElasticGroup::~ElasticGroup() = default;

void ElasticGroup::setComputeStream(void* stream) {
  stream_ = stream;
  current_->setComputeStream(stream);
}

void ElasticGroup::prepareFences(int fenceCount) {
  fences_ = fenceCount;
  current_->prepareFences(fenceCount);
}

bool ElasticGroup::collective(const std::function<void(Communicator&)>& op) {
  ++seq_;
  if (seq_ < skipUntil_) return false;
  for (;;) {
    try {
      op(*current_);
      return true;
    } catch (const CommError& e) {
      if (!recover(e)) return false;
    }
  }
}

bool ElasticGroup::recover(const CommError& cause) {
  for (CommError why = cause;;) {
    Regroup next = recovery_.regroup(why);
    DTLAB_ENFORCE(next.comm != nullptr && !next.members.empty(), "a regroup without a group");
    DTLAB_ENFORCE(
        std::find(next.members.begin(), next.members.end(), originalRank_) != next.members.end(),
        "rank ", originalRank_, " is not in the group it was asked to join");
    retiredSent_ += current_->bytesSent();
    retiredReceived_ += current_->bytesReceived();
    owned_ = std::move(next.comm);  // the previous re-formed group, if any, closes here
    current_ = owned_.get();
    if (stream_ != nullptr) current_->setComputeStream(stream_);
    if (fences_ > 0) current_->prepareFences(fences_);
    members_ = std::move(next.members);
    generation_ = next.generation;
    // Where every survivor stands: the number of the collective that failed on it. Exact in a
    // float up to 2^24 collectives.
    const std::size_t n = members_.size();
    std::vector<float> seqs(n);
    const float mine = static_cast<float>(seq_);
    try {
      current_->allGather(&mine, 1, seqs.data());
    } catch (const CommError& e) {
      why = e;  // another peer lost while the survivors met: once more, without it
      continue;
    }
    const auto furthest = static_cast<int64_t>(*std::max_element(seqs.begin(), seqs.end()));
    logAt(LogLevel::kInfo, "rank ", originalRank_, ": group ", generation_, " of ", n,
          " formed after: ", cause.what(), "; collective ", seq_, ", the furthest ", furthest);
    if (furthest == seq_) return true;
    skipUntil_ = furthest;
    return false;
  }
}

}  // namespace dtlab::core
