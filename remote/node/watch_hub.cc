#include "remote/node/watch_hub.h"

#include "core/common/log.h"
#include "remote/common/protocol.h"

namespace dtlab::remote {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPumpInterval{20};

}  // namespace

class WatchHub::Stream final : public grpc::ServerWriteReactor<proto::JobUpdate> {
 public:
  Stream(WatchHub& hub, std::shared_ptr<Job> job) : hub_(hub), job_(std::move(job)) {
    job_->watcherAttached();  // the coordinator's lease on the job (Job's class comment)
  }

  // Hub thread: start the next write if none is in flight (see the class comment).
  void pump(Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_ || finishing_ || writing_) return;
    if (finalSent_) return;
    update_.Clear();
    const bool any =
        job_->buffer().fill(cursor_, kMaxPointsPerUpdate, kMaxBlobBytesPerUpdate, update_);
    if (!any && now - lastWrite_ < job_->settings().heartbeat) return;
    finalSent_ = update_.finished();
    writing_ = true;
    lastWrite_ = now;
    StartWrite(&update_);
  }

  bool done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }

  void OnWriteDone(bool ok) override {
    WatchHub& hub = hub_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      writing_ = false;
      if (!ok) {
        logAt(LogLevel::kInfo, "job ", job_->id(), ": a watcher went away");
        finishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away"));
      } else if (finalSent_) {
        finishLocked(grpc::Status::OK);
      }
    }
    hub.wake();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    finishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "WatchJob cancelled"));
  }

  void OnDone() override {
    WatchHub& hub = hub_;  // `this` may be deleted by the hub as soon as done_ is set
    job_->watcherDetached();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    hub.wake();
  }

 private:
  void finishLocked(const grpc::Status& status) {
    if (finishing_) return;
    finishing_ = true;
    Finish(status);
  }

  WatchHub& hub_;
  const std::shared_ptr<Job> job_;
  mutable std::mutex mutex_;
  bool writing_ = false;
  bool finishing_ = false;
  bool finalSent_ = false;
  bool done_ = false;
  proto::JobUpdate update_;  // the message in flight; gRPC reads it until OnWriteDone
  JobBuffer::Cursor cursor_;
  Clock::time_point lastWrite_{};  // epoch: the first visit writes at once
};

WatchHub::WatchHub() : thread_([this] { loop(); }) {}

WatchHub::~WatchHub() {
  stop();
}

grpc::ServerWriteReactor<proto::JobUpdate>* WatchHub::watch(std::shared_ptr<Job> job) {
  auto* stream = new Stream(*this, std::move(job));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(stream);
    wake_ = true;
  }
  changed_.notify_all();
  return stream;
}

std::size_t WatchHub::openStreams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t open = 0;
  for (const Stream* s : streams_) open += s->done() ? 0 : 1;
  return open;
}

bool WatchHub::waitAllDone(std::chrono::milliseconds timeout) const {
  const auto end = Clock::now() + timeout;
  while (openStreams() > 0) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void WatchHub::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_ = true;
  }
  changed_.notify_all();
}

void WatchHub::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (Stream*& s : streams_) {
    if (s->done()) {
      delete s;
    } else {
      // gRPC still owns it (the server was not shut down first); leaking beats a crash.
      logAt(LogLevel::kWarn, "a WatchJob stream was still open when the node stopped");
    }
  }
  streams_.clear();
}

void WatchHub::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (streams_.empty())
      changed_.wait(lock, [this] { return wake_ || stop_; });
    else
      changed_.wait_for(lock, kPumpInterval, [this] { return wake_ || stop_; });
    wake_ = false;
    if (stop_) break;
    const auto now = Clock::now();
    for (auto it = streams_.begin(); it != streams_.end();) {
      if ((*it)->done()) {
        delete *it;
        it = streams_.erase(it);
      } else {
        (*it)->pump(now);
        ++it;
      }
    }
  }
}

}  // namespace dtlab::remote
