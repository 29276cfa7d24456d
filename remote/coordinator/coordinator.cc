#include "remote/coordinator/coordinator.h"

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "core/common/check.h"
#include "remote/common/client.h"
#include "remote/common/protocol.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {
namespace {

namespace pb = dtlab::remote::proto;
using Clock = std::chrono::steady_clock;

// WatchJob streams live as long as the run; liveness comes from heartbeats, so their
// deadline is only a backstop against a leaked call.
constexpr auto kStreamDeadline = std::chrono::hours(24 * 7);

std::string newJobId() {
  std::random_device random;
  const uint64_t a = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(a));
  return text;
}

core::StepMetrics toCore(const pb::StepPoint& p) {
  core::StepMetrics m;
  m.worker = p.worker();
  m.step = p.step();
  m.wallMs = p.wall_ms();
  m.loss = p.loss();
  m.samplesPerS = p.samples_per_s();
  m.stepMs = p.step_ms();
  m.computeMs = p.compute_ms();
  m.commMs = p.comm_ms();
  m.waitMs = p.wait_ms();
  m.utilization = p.utilization();
  m.batchShare = p.batch_share();
  m.staleness = p.staleness();
  return m;
}

}  // namespace

struct Coordinator::Impl {
  struct Node {
    std::string address;
    std::string name;
    std::unique_ptr<pb::NodeService::Stub> stub;
  };
  std::vector<Node> nodes;
  CoordinatorOptions options;

  void prepare(grpc::ClientContext& context, std::chrono::milliseconds deadline) const {
    prepareClientContext(context, options.token, deadline);
  }
  std::string label(std::size_t i) const { return nodes[i].name + " (" + nodes[i].address + ")"; }
  void cancelJob(std::size_t i, const std::string& jobId) const {
    grpc::ClientContext context;
    prepare(context, std::chrono::milliseconds(2000));
    pb::CancelJobRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(jobId);
    pb::CancelJobResponse response;
    static_cast<void>(nodes[i].stub->CancelJob(&context, request, &response));
  }
};

Coordinator::Coordinator(std::vector<std::string> addresses, CoordinatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);
    auto channel =
        grpc::CreateCustomChannel(addresses[i], grpc::InsecureChannelCredentials(), args);
    impl_->nodes.push_back(
        {addresses[i], "node" + std::to_string(i), pb::NodeService::NewStub(channel)});
  }
}

Coordinator::~Coordinator() = default;

std::vector<NodeSummary> Coordinator::connect() {
  if (impl_->nodes.empty()) throw Error("no nodes to run on");
  std::vector<NodeSummary> out;
  for (std::size_t i = 0; i < impl_->nodes.size(); ++i) {
    grpc::ClientContext context;
    impl_->prepare(context, impl_->options.callDeadline);
    pb::GetInfoRequest request;
    request.set_protocol_version(kProtocolVersion);
    pb::NodeInfo info;
    const grpc::Status status = impl_->nodes[i].stub->GetInfo(&context, request, &info);
    if (!status.ok())
      throw Error("node " + impl_->nodes[i].address + ": " + describeStatus(status));
    if (info.protocol_version() != kProtocolVersion)
      throw Error("node " + impl_->nodes[i].address + " speaks protocol " +
                  std::to_string(info.protocol_version()) + ", this coordinator " +
                  std::to_string(kProtocolVersion) + ": update one of them");
    const auto& caps = info.capabilities();
    if (std::find(caps.begin(), caps.end(), "sync_allreduce") == caps.end())
      throw Error("node " + impl_->nodes[i].address + " cannot run sync_allreduce");
    NodeSummary s;
    s.address = impl_->nodes[i].address;
    s.name = impl_->nodes[i].name;
    s.programVersion = info.program_version();
    s.hostname = info.hostname();
    s.speed = info.speed();
    s.cores = info.cores();
    s.busy = info.busy();
    out.push_back(s);
  }
  return out;
}

core::RunSummary Coordinator::run(const core::ExperimentSpec& spec, int variant,
                                  core::MetricSink* sink, const std::atomic<bool>* cancel) {
  Impl& impl = *impl_;
  const std::size_t world = impl.nodes.size();
  const std::string jobId = newJobId();
  const std::string specJson = core::toJson(spec).dump();
  const Clock::time_point start = Clock::now();

  core::RunSummary summary;
  summary.name = spec.variants.at(static_cast<std::size_t>(variant)).name;
  summary.strategy = core::toString(spec.variants[static_cast<std::size_t>(variant)].strategy);
  std::mutex mutex;  // guards sink calls, summary.events and the per-node state below
  auto addEvent = [&](int64_t step, std::string kind, std::string detail) {
    core::RunEvent e{step, std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                     std::move(kind), std::move(detail)};
    if (sink != nullptr) sink->onEvent(e);
    summary.events.push_back(std::move(e));
  };

  // b. Start everywhere.
  std::size_t started = 0;
  try {
    for (; started < world; ++started) {
      grpc::ClientContext context;
      impl.prepare(context, std::chrono::milliseconds(10000));
      pb::StartJobRequest request;
      request.set_protocol_version(kProtocolVersion);
      request.set_job_id(jobId);
      request.set_spec_json(specJson);
      request.set_variant(variant);
      request.set_rank(static_cast<int>(started));
      request.set_world_size(static_cast<int>(world));
      request.set_rendezvous_address(impl.nodes[0].address);
      request.set_node_name(impl.nodes[started].name);
      request.set_collective_address("127.0.0.1");
      request.set_heartbeat_ms(static_cast<uint64_t>(impl.options.heartbeatInterval.count()));
      pb::StartJobResponse response;
      const grpc::Status status = impl.nodes[started].stub->StartJob(&context, request, &response);
      if (!status.ok())
        throw Error("starting the job on " + impl.label(started) + ": " + describeStatus(status));
    }
  } catch (...) {
    for (std::size_t i = 0; i < started; ++i) impl.cancelJob(i, jobId);
    throw;
  }

  // c. Watch every node.
  struct Watch {
    std::unique_ptr<grpc::ClientContext> context;
    Clock::time_point last = Clock::now();
    bool finished = false;
    bool broken = false;
    std::string error;
    pb::JobResult result;
  };
  std::vector<Watch> watches(world);
  std::vector<std::thread> readers;
  std::condition_variable changed;
  for (std::size_t i = 0; i < world; ++i) {
    watches[i].context = std::make_unique<grpc::ClientContext>();
    prepareClientContext(*watches[i].context, impl.options.token,
                         std::chrono::duration_cast<std::chrono::milliseconds>(kStreamDeadline));
    readers.emplace_back([&, i] {
      pb::WatchJobRequest request;
      request.set_protocol_version(kProtocolVersion);
      request.set_job_id(jobId);
      auto reader = impl.nodes[i].stub->WatchJob(watches[i].context.get(), request);
      pb::JobUpdate update;
      while (reader->Read(&update)) {
        std::lock_guard lock(mutex);
        watches[i].last = Clock::now();
        if (sink != nullptr) {
          for (const auto& p : update.steps()) sink->onStep(toCore(p));
          for (const auto& e : update.evals())
            sink->onEval({e.step(), e.wall_ms(), e.test_loss(), e.test_accuracy()});
        }
        for (const auto& e : update.events()) {
          core::RunEvent event{e.step(), e.wall_ms(), e.kind(), e.detail()};
          if (sink != nullptr) sink->onEvent(event);
          if (event.kind != "finish") summary.events.push_back(std::move(event));
        }
        if (update.finished()) {
          watches[i].finished = true;
          watches[i].result = update.result();
        }
      }
      const grpc::Status status = reader->Finish();
      std::lock_guard lock(mutex);
      if (!watches[i].finished) {
        watches[i].broken = true;
        watches[i].error = "its stream broke (" + describeStatus(status) + ")";
      }
      changed.notify_all();
    });
  }

  // Watchdog: a lost node fails the run, naming it; a user's cancel is forwarded.
  std::string lostNode;
  bool cancelSent = false;
  {
    std::unique_lock lock(mutex);
    while (true) {
      const bool allDone = std::all_of(watches.begin(), watches.end(),
                                       [](const Watch& w) { return w.finished || w.broken; });
      if (allDone) break;
      if (lostNode.empty()) {
        for (std::size_t i = 0; i < world; ++i) {
          Watch& w = watches[i];
          if (w.finished) continue;
          const bool silent = Clock::now() - w.last > impl.options.lostAfter;
          if (!w.broken && !silent) continue;
          lostNode = impl.label(i) + " lost: " +
                     (w.broken ? w.error
                               : "no heartbeat for " +
                                     std::to_string(impl.options.lostAfter.count()) + " ms");
          addEvent(0, "node_lost", lostNode);
          lock.unlock();
          for (std::size_t j = 0; j < world; ++j)
            if (j != i) impl.cancelJob(j, jobId);
          lock.lock();
          if (!w.broken) w.context->TryCancel();
          break;
        }
        if (!lostNode.empty()) {
          // The others wind down (their collectives fail as the peer's sockets close);
          // don't wait on them for ever.
          const Clock::time_point giveUp = Clock::now() + std::chrono::seconds(10);
          changed.wait_until(lock, giveUp, [&] {
            return std::all_of(watches.begin(), watches.end(),
                               [](const Watch& w) { return w.finished || w.broken; });
          });
          for (Watch& w : watches)
            if (!w.finished && !w.broken) w.context->TryCancel();
          continue;
        }
      }
      if (!cancelSent && cancel != nullptr && cancel->load()) {
        cancelSent = true;
        lock.unlock();
        for (std::size_t i = 0; i < world; ++i) impl.cancelJob(i, jobId);
        lock.lock();
      }
      changed.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  for (std::thread& t : readers) t.join();

  // d. Merge.
  double maxStepMs = 0.0;
  double utilization = 0.0;
  double waitFraction = 0.0;
  summary.status = "completed";
  for (std::size_t i = 0; i < world; ++i) {
    const pb::JobResult& r = watches[i].result;
    summary.paramChecksum.push_back(r.param_checksum());
    summary.samples += r.samples();
    maxStepMs = std::max(maxStepMs, r.step_ms_total());
    if (r.step_ms_total() > 0.0) {
      utilization += r.compute_ms_total() / r.step_ms_total() / static_cast<double>(world);
      waitFraction += r.wait_ms_total() / r.step_ms_total() / static_cast<double>(world);
    }
    if (!watches[i].finished || r.status() == "failed") {
      summary.status = "failed";
      if (summary.error.empty())
        summary.error = watches[i].finished ? impl.label(i) + ": " + r.error()
                                            : impl.label(i) + " " + watches[i].error;
    } else if (r.status() == "cancelled" && summary.status == "completed") {
      summary.status = "cancelled";
    }
  }
  if (!lostNode.empty()) summary.error = lostNode;
  const pb::JobResult& lead = watches[0].result;
  summary.steps = lead.steps();
  summary.stopReason = summary.status == "failed" ? "error" : lead.stop_reason();
  if (lead.has_test_accuracy()) summary.finalTestAccuracy = lead.final_test_accuracy();
  if (watches[0].finished) summary.finalTestLoss = lead.final_test_loss();
  if (lead.has_time_to_target()) summary.timeToTargetS = lead.time_to_target_s();
  summary.samplesPerS =
      maxStepMs > 0.0 ? static_cast<double>(summary.samples) * 1000.0 / maxStepMs : 0.0;
  summary.meanUtilization = utilization;
  summary.meanWaitFraction = waitFraction;
  summary.wallS = std::chrono::duration<double>(Clock::now() - start).count();
  addEvent(summary.steps, "finish", summary.status + " (" + summary.stopReason + ")");
  return summary;
}

}  // namespace dtlab::remote
