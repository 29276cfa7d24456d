#include "remote/node/job.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "core/backend/backend.h"
#include "core/backend/device_monitor.h"
#include "core/common/config.h"
#include "core/common/log.h"
#include "core/common/process_memory.h"
#include "core/train/strategy_registry.h"
#include "remote/node/parameter_client.h"
#include "remote/node/process_usage.h"

namespace dtlab::remote {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kSampleInterval{500};
constexpr std::chrono::milliseconds kFirstStepPoll{20};

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

core::WorkerResult failedResult(const std::string& message, core::FailureOrigin origin) {
  core::WorkerResult result;
  result.status = core::RunStatus::kFailed;
  result.stopReason = core::StopReason::kError;
  result.error = message;
  result.origin = origin;
  return result;
}

}  // namespace

Job::Job(JobSettings settings) : settings_(std::move(settings)), started_(Clock::now()) {
  const core::VariantConfig& variant =
      settings_.work.spec.variants.at(static_cast<std::size_t>(settings_.work.variant));
  if (settings_.work.world > 1 && core::strategyOf(variant).traits.needsCollectiveGroup)
    group_ = std::make_unique<JobGroup>(settings_, abort_, cancel_);
  sampler_ = std::thread([this] { sampleLoop(); });
  thread_ = std::thread([this] { run(); });
}

Job::~Job() {
  cancel_.store(true);
  abort_.abort("the node dropped the job");
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samplerStop_ = true;
  }
  changed_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

bool Job::cancel(bool abortNow, const std::string& why) {
  cancel_.store(true);
  if (abortNow) {
    abort_.abort(why);
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cancelledAt_) {
      cancelledAt_ = Clock::now();
      cancelReason_ = why;
    }
  }
  changed_.notify_all();
  return running();
}

std::string Job::regroup(const GroupNotice& notice) {
  if (!group_) return "job " + settings_.jobId + " has no collective group to re-form";
  return group_->notify(notice);
}

void Job::watcherAttached() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++watchers_;
}

void Job::watcherDetached() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--watchers_ == 0) unwatchedSince_ = Clock::now();
}

std::string Job::leaseLapsed(Clock::time_point now) const {
  if (watchers_ > 0 || cancelledAt_ || abort_.aborted() || !running()) return {};
  const auto toSeconds = [](Clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
  };
  if (unwatchedSince_) {
    if (now - *unwatchedSince_ < kLeaseGrace) return {};
    return "the coordinator is gone (no WatchJob stream for " + toSeconds(now - *unwatchedSince_) +
           ")";
  }
  if (now - started_ < settings_.connectTimeout + kLeaseGrace) return {};
  return "no coordinator watched the job within " + toSeconds(now - started_) + " of its start";
}

bool Job::waitEnded(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] { return ended_; });
}

void Job::run() {
  const auto& work = settings_.work;
  logAt(LogLevel::kInfo, "job ", settings_.jobId, ": starting rank ", work.rank, " of ", work.world,
        " (variant ", work.variant, ")");
  core::WorkerResult result;
  try {
    // The peak from here on is this job's: the daemon's earlier jobs do not count.
    core::resetPeakResidentBytes();
    result = runWithCommunicator();
    result.peakMemBytes = core::peakResidentBytes().value_or(0);
  } catch (const std::exception& e) {
    result = failedResult(e.what(), core::FailureOrigin::kThisRank);
  } catch (...) {
    result = failedResult("unknown error in the job thread", core::FailureOrigin::kThisRank);
  }
  if (result.status == core::RunStatus::kFailed && cancel_.load()) {
    // A group torn down by a cancel fails its collectives; the coordinator asked for it.
    logAt(LogLevel::kDebug, "job ", settings_.jobId, ": failure after cancel: ", result.error);
    result.status = core::RunStatus::kCancelled;
    result.stopReason = core::StopReason::kCancelled;
    result.origin = core::FailureOrigin::kNone;
    result.error.clear();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samplerStop_ = true;
  }
  changed_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  logAt(result.status == core::RunStatus::kFailed ? LogLevel::kWarn : LogLevel::kInfo, "job ",
        settings_.jobId, ": ", core::toString(result.status),
        result.error.empty() ? "" : ": " + result.error, " after ", result.steps, " steps");
  buffer_.finish(result);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
  }
  changed_.notify_all();
}

core::WorkerResult Job::runWithCommunicator() {
  const auto& work = settings_.work;
  std::unique_ptr<core::Communicator> comm;
  // Workers of a parameter server talk only to its shards: no group, so that a lost worker
  // touches no other worker (on_node_loss "continue").
  if (group_) {
    try {
      comm = group_->first();
    } catch (const std::exception& e) {
      // Not reaching a peer is this node's report of that peer; a communication origin lets
      // the coordinator prefer a rank's own failure if there is one.
      return failedResult("node " + settings_.nodeName + " (rank " + std::to_string(work.rank) +
                              ") could not join the collective group (rendezvous at " +
                              settings_.rendezvousAddress + ", bound to " +
                              settings_.collectiveAddress + "): " + e.what(),
                          core::FailureOrigin::kCommunication);
    }
  }
  const core::StrategyTraits traits =
      core::strategyOf(work.spec.variants.at(static_cast<std::size_t>(work.variant))).traits;
  // Parameter-server strategies talk to the shards' daemons (this one's included) over gRPC.
  std::unique_ptr<GrpcParameterClient> ps;
  if (traits.usesParameterServer && work.world > 1) {
    ParameterClientOptions options;
    options.jobId = settings_.jobId;
    options.addresses = settings_.psAddresses;
    options.names = settings_.psNames;
    options.token = settings_.token;
    options.connectTimeout = settings_.connectTimeout;
    options.abort = &abort_;
    ps = std::make_unique<GrpcParameterClient>(
        core::psLayoutFor(work.spec, work.variant, work.world), std::move(options));
  }
  // comm (and with it the Gloo connections) goes before the result is published.
  return core::runWorker(work, comm.get(), &buffer_, &cancel_, ps.get(),
                         group_ && group_->continues() ? group_.get() : nullptr);
}

void Job::sampleLoop() {
  const int cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  // The worker's GPU, when it trains on one; a monitor that cannot start costs the GPU
  // series, not the job (the worker itself reports why its device fails).
  std::unique_ptr<core::DeviceMonitor> gpu;
  try {
    gpu = core::makeDeviceMonitor(settings_.work.device);
    if (gpu)
      logAt(LogLevel::kInfo, "job ", settings_.jobId, ": gpu_util of ", settings_.work.device,
            " from ", gpu->source());
  } catch (const std::exception& e) {
    logAt(LogLevel::kWarn, "job ", settings_.jobId, ": no GPU metrics: ", e.what());
  }
  auto lastWall = Clock::now();
  double lastCpu = processCpuSeconds();
  // A sample of what the process used since the last (its CPU over the interval's wall time),
  // up to now or to the reading of a step (`upTo`).
  const auto sampleSinceLast = [&](std::optional<JobBuffer::StepClock> upTo = std::nullopt) {
    const auto now = upTo ? upTo->at : Clock::now();
    const double cpu = upTo ? upTo->cpuS : processCpuSeconds();
    const double wallS = std::chrono::duration<double>(now - lastWall).count();
    core::NodeMetrics sample;
    sample.node = settings_.work.rank;
    sample.wallMs = msSince(started_);
    // Share of the whole machine (all cores) this process used since the last sample.
    sample.cpuUtil = wallS > 0 ? std::clamp((cpu - lastCpu) / (wallS * cores), 0.0, 1.0) : 0.0;
    if (gpu) {
      const core::DeviceSample device = gpu->sample();
      sample.gpuUtil = device.util;
      sample.gpuMemBytes = device.memBytes;
    }
    sample.memBytes = static_cast<double>(residentBytes());
    buffer_.onNode(sample);
    lastWall = now;
    lastCpu = cpu;
  };
  std::unique_lock<std::mutex> lock(mutex_);
  auto nextSample = Clock::now() + kSampleInterval;
  // The samples' intervals start at the first step, so that none mixes the job's set-up (data,
  // connections) with training: the scale simulator's calibration reads a node's CPU work per
  // step from them. Until then the loop looks for it every kFirstStepPoll.
  bool training = false;
  for (;;) {
    // Wake for the next sample, or for the end of a polite cancel's grace.
    auto wake = training ? nextSample : std::min(nextSample, Clock::now() + kFirstStepPoll);
    if (cancelledAt_ && !abort_.aborted()) wake = std::min(wake, *cancelledAt_ + kCancelGrace);
    if (changed_.wait_until(lock, wake, [this] { return samplerStop_; })) {
      // The interval since the last sample up to the last step (short runs have no other; the
      // final evaluation and the teardown are not training).
      const std::optional<JobBuffer::StepClock> last = buffer_.lastStepClock();
      if (training && last && last->at - lastWall >= kFirstStepPoll) sampleSinceLast(last);
      break;
    }
    if (!training) {
      if (const std::optional<JobBuffer::StepClock> first = buffer_.lastStepClock()) {
        training = true;
        lastWall = first->at;
        lastCpu = first->cpuS;
        nextSample = lastWall + kSampleInterval;
      }
    }
    if (cancelledAt_ && Clock::now() >= *cancelledAt_ + kCancelGrace && !abort_.aborted()) {
      const std::string why = cancelReason_ + ": not stopped within " +
                              std::to_string(kCancelGrace.count()) + " ms, aborting";
      lock.unlock();
      logAt(LogLevel::kInfo, "job ", settings_.jobId, ": ", why);
      abort_.abort(why);
      lock.lock();
    }
    if (const std::string why = leaseLapsed(Clock::now()); !why.empty()) {
      lock.unlock();
      logAt(LogLevel::kWarn, "job ", settings_.jobId, ": ", why, ": dropping it");
      cancel(/*abortNow=*/true, why);
      lock.lock();
    }
    if (Clock::now() < nextSample) continue;
    nextSample += kSampleInterval;
    sampleSinceLast();
  }
}

}  // namespace dtlab::remote
