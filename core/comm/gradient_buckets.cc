#include "core/comm/gradient_buckets.h"

#include <algorithm>
#include <chrono>

#include "core/common/check.h"

namespace dtlab::core {

std::vector<GradientRange> planBuckets(const std::vector<GradientRange>& blocksInBackwardOrder,
                                       int64_t bucketBytes) {
  const int64_t bucketFloats =
      std::max<int64_t>(1, bucketBytes / static_cast<int64_t>(sizeof(float)));
  std::vector<GradientRange> buckets;
  GradientRange current;
  for (const GradientRange& block : blocksInBackwardOrder) {
    if (current.size() > 0 && block.end == current.begin) {
      current.begin = block.begin;  // the usual case: backward walks the layout downwards
    } else if (current.size() > 0 && block.begin == current.end) {
      current.end = block.end;
    } else {
      if (current.size() > 0) buckets.push_back(current);
      current = block;
    }
    if (current.size() >= bucketFloats) {
      buckets.push_back(current);
      current = {};
    }
  }
  if (current.size() > 0) buckets.push_back(current);
  return buckets;
}

GradientBuckets::GradientBuckets(Communicator& comm, float* grads, int64_t count,
                                 const std::vector<GradientRange>& blocksInBackwardOrder,
                                 const GradientBucketsOptions& options)
    : comm_(comm), grads_(grads), count_(count), options_(options) {
  DTLAB_ENFORCE(count >= 0, "negative gradient count: ", count);
  DTLAB_ENFORCE(count == 0 || grads != nullptr, "null gradient buffer");
  DTLAB_ENFORCE(options.bucketBytes > 0, "bucket size must be positive: ", options.bucketBytes);

  // The blocks must tile [0, count): an element outside every block would never be reduced
  // and an element in two would be marked twice.
  std::vector<GradientRange> sorted = blocksInBackwardOrder;
  std::sort(sorted.begin(), sorted.end(),
            [](const GradientRange& a, const GradientRange& b) { return a.begin < b.begin; });
  int64_t expected = 0;
  for (const GradientRange& block : sorted) {
    DTLAB_ENFORCE(block.begin < block.end, "empty or reversed gradient block [", block.begin, ", ",
                  block.end, ")");
    DTLAB_ENFORCE_EQ(block.begin, expected, "gradient blocks must tile [0, ", count,
                     ") without gaps or overlaps");
    expected = block.end;
  }
  DTLAB_ENFORCE_EQ(expected, count, "gradient blocks must cover the whole buffer");

  buckets_ = planBuckets(blocksInBackwardOrder, options.bucketBytes);

  bucketsByPosition_.resize(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) bucketsByPosition_[i] = static_cast<int>(i);
  std::sort(bucketsByPosition_.begin(), bucketsByPosition_.end(),
            [&](int a, int b) { return buckets_[a].begin < buckets_[b].begin; });
  readyElements_.assign(buckets_.size(), 0);
  bucketSeconds_.assign(buckets_.size(), 0.0);
  lastBucketSeconds_.assign(buckets_.size(), 0.0);

  comm_.prepareFences(static_cast<int>(buckets_.size()));
  if (!buckets_.empty()) thread_ = std::thread([this] { communicationLoop(); });
}

GradientBuckets::~GradientBuckets() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  bucketReady_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientBuckets::markReady(int64_t begin, int64_t end) {
  DTLAB_ENFORCE(0 <= begin && begin <= end && end <= count_, "marked range [", begin, ", ", end,
                ") outside the gradient buffer of ", count_);
  if (begin == end) return;
  bool completed = false;
  {
    std::lock_guard lock(mutex_);
    // First bucket whose begin is after `begin`, then step back to the one containing it.
    auto it = std::upper_bound(bucketsByPosition_.begin(), bucketsByPosition_.end(), begin,
                               [&](int64_t value, int b) { return value < buckets_[b].begin; });
    --it;
    for (; it != bucketsByPosition_.end() && buckets_[*it].begin < end; ++it) {
      const GradientRange& bucket = buckets_[*it];
      const int64_t overlap = std::min(end, bucket.end) - std::max(begin, bucket.begin);
      int64_t& ready = readyElements_[static_cast<size_t>(*it)];
      ready += overlap;
      DTLAB_ENFORCE(ready <= bucket.size(), "gradient elements of bucket [", bucket.begin, ", ",
                    bucket.end, ") marked ready twice in one step");
      if (ready == bucket.size()) {
        // Under the lock, before the communication thread can see the bucket complete: a
        // GPU's collective then waits for the compute stream only as far as this bucket's
        // kernels (queued by now).
        comm_.markComputeFence(*it);
        completed = true;
      }
    }
    markedElements_ += end - begin;
  }
  if (completed) bucketReady_.notify_one();
}

void GradientBuckets::waitAll() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::unique_lock lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  DTLAB_ENFORCE_EQ(markedElements_, count_,
                   "waitAll() before every gradient element was marked ready this step");
  stepDone_.wait(lock,
                 [&] { return error_ || reducedBuckets_ == static_cast<int>(buckets_.size()); });
  if (error_) std::rethrow_exception(error_);
  lastCommSeconds_ = commSeconds_;
  std::copy(bucketSeconds_.begin(), bucketSeconds_.end(), lastBucketSeconds_.begin());
  lastExposedSeconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  commSeconds_ = 0.0;
  std::fill(readyElements_.begin(), readyElements_.end(), 0);
  markedElements_ = 0;
  reducedBuckets_ = 0;
  ++step_;
}

void GradientBuckets::communicationLoop() {
  using Clock = std::chrono::steady_clock;
  for (uint64_t step = 0;; ++step) {
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const GradientRange bucket = buckets_[i];
      {
        std::unique_lock lock(mutex_);
        // step_ == step keeps the last step's full counters from starting the next step
        // before waitAll() has re-armed them.
        bucketReady_.wait(
            lock, [&] { return stop_ || (step_ == step && readyElements_[i] == bucket.size()); });
        if (stop_) return;
      }
      const auto start = Clock::now();
      try {
        if (options_.reducer != nullptr) {
          options_.reducer->reduce(comm_, grads_, bucket);
          if (options_.average)
            for (float* x = grads_ + bucket.begin; x != grads_ + bucket.end; ++x)
              *x /= static_cast<float>(comm_.size());
        } else {
          comm_.allReduceAfterFence(grads_ + bucket.begin, bucket.size(), options_.average,
                                    static_cast<int>(i));
        }
      } catch (...) {
        {
          std::lock_guard lock(mutex_);
          error_ = std::current_exception();
        }
        stepDone_.notify_all();
        return;  // the communicator is unusable now; waitAll() reports why
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      bool done = false;
      {
        std::lock_guard lock(mutex_);
        commSeconds_ += seconds;
        bucketSeconds_[i] = seconds;
        done = ++reducedBuckets_ == static_cast<int>(buckets_.size());
      }
      if (done) stepDone_.notify_all();
    }
  }
}

}  // namespace dtlab::core
