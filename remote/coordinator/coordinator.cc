#include "remote/coordinator/coordinator.h"

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "core/common/check.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/metric_wire.h"
#include "remote/common/protocol.h"
#include "remote/coordinator/merge.h"
#include "remote/coordinator/placement.h"
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

std::shared_ptr<grpc::Channel> channelTo(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(16 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// Step a for one node: GetInfo with a deadline, its protocol version checked.
NodeSummary getInfo(pb::NodeService::Stub& stub, const std::string& address,
                    const std::string& token, std::chrono::milliseconds deadline) {
  grpc::ClientContext context;
  prepareClientContext(context, token, deadline);
  pb::GetInfoRequest request;
  request.set_protocol_version(kProtocolVersion);
  pb::NodeInfo info;
  const grpc::Status status = stub.GetInfo(&context, request, &info);
  if (!status.ok()) throw Error("node " + address + ": " + describeStatus(status));
  if (info.protocol_version() != kProtocolVersion)
    throw Error("node " + address + " speaks protocol " + std::to_string(info.protocol_version()) +
                ", this coordinator " + std::to_string(kProtocolVersion) + ": update one of them");
  NodeSummary s;
  s.advertiseHost = info.advertise_host();
  s.capabilities.assign(info.capabilities().begin(), info.capabilities().end());
  s.address = address;
  s.programVersion = info.program_version();
  s.hostname = info.hostname();
  s.speed = info.speed();
  s.bandwidthMbps = info.bandwidth_mbps();
  s.latencyMs = info.latency_ms();
  s.cores = info.cores();
  s.busy = info.busy();
  s.workerThreads = info.worker_threads();
  s.cpuSlots = 0;
  for (const pb::DeviceInfo& d : info.devices()) {
    s.devices.push_back(d.kind() == "cuda" ? d.name() + " (" + d.detail() + ")"
                                           : d.name() + " (" + std::to_string(d.slots()) +
                                                 (d.slots() == 1 ? " slot)" : " slots)"));
    if (d.kind() == "cuda") ++s.gpus;
    if (d.kind() == "cpu") s.cpuSlots += std::max(1, d.slots());
  }
  s.cpuSlots = std::max(1, s.cpuSlots);
  return s;
}

}  // namespace

struct Coordinator::Impl {
  struct Node {
    std::string address;
    std::string name;
    std::unique_ptr<pb::NodeService::Stub> stub;
  };
  std::vector<Node> nodes;
  std::vector<NodeSummary> summaries;  // from connect()
  CoordinatorOptions options;

  const std::string& token(std::size_t i) const {
    const auto it = options.nodeTokens.find(nodes[i].address);
    return it == options.nodeTokens.end() ? options.token : it->second;
  }
  void prepare(grpc::ClientContext& context, std::size_t i,
               std::chrono::milliseconds deadline) const {
    prepareClientContext(context, token(i), deadline);
  }
  std::string label(std::size_t i) const { return nodes[i].name + " (" + nodes[i].address + ")"; }
  void cancelJob(std::size_t i, const std::string& jobId, bool abort = false) const {
    grpc::ClientContext context;
    prepare(context, i, std::chrono::milliseconds(1000));
    pb::CancelJobRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(jobId);
    request.set_abort(abort);
    pb::CancelJobResponse response;
    static_cast<void>(nodes[i].stub->CancelJob(&context, request, &response));
  }
  // Starts the job on every rank's node, in rank order. When a start fails, the jobs already
  // started are aborted (none is left waiting at the rendezvous for ranks that will never
  // come) and the error names the rank.
  void startJobs(const Placement& placement, const std::string& jobId, const std::string& specJson,
                 int variant) const;
  using EventAdder = std::function<void(int64_t step, std::string kind, std::string detail)>;
  // Reads every rank's WatchJob stream (metrics to the sink, events to `events`, under
  // `mutex`) until all have ended, with a watchdog: a silent or broken node is lost and a
  // failed rank ends the run (the others are aborted); a user's cancel is forwarded; ranks
  // that have not reported their end windDown later are left behind. Fills `ends`.
  WatchEnd watchJobs(const Placement& placement, const std::string& jobId, core::MetricSink* sink,
                     const std::atomic<bool>* cancel, std::mutex& mutex,
                     std::vector<core::RunEvent>& events, const EventAdder& addEvent,
                     std::vector<RankEnd>& ends) const;
  pb::StartJobRequest startRequest(const Placement& placement, std::size_t rank,
                                   const std::string& jobId, const std::string& specJson,
                                   int variant) const;
};

pb::StartJobRequest Coordinator::Impl::startRequest(const Placement& placement, std::size_t rank,
                                                    const std::string& jobId,
                                                    const std::string& specJson,
                                                    int variant) const {
  const std::size_t node = placement.ranks[rank].node;
  pb::StartJobRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_job_id(jobId);
  request.set_spec_json(specJson);
  request.set_variant(variant);
  request.set_rank(static_cast<int>(rank));
  request.set_world_size(static_cast<int>(placement.world()));
  request.set_rendezvous_address(placement.rendezvous);
  request.set_node_name(nodes[node].name);
  request.set_reached_host(parseHostPort(nodes[node].address, "node address").host);
  request.set_slot(placement.ranks[rank].slot);
  request.set_node_index(static_cast<int>(node));
  request.set_heartbeat_ms(static_cast<uint64_t>(options.heartbeatInterval.count()));
  request.set_connect_timeout_ms(static_cast<uint64_t>(options.connectTimeout.count()));
  for (std::size_t k = 0; k < placement.psAddresses.size(); ++k) {
    request.add_ps_addresses(placement.psAddresses[k]);
    request.add_ps_names(nodes[k].name);
  }
  if (!options.emulation.empty()) {
    const core::NodeConfig& entry = options.emulation[node];
    pb::NodeEmulation* emulation = request.mutable_emulation();
    emulation->set_speed(entry.speed);
    emulation->set_bandwidth_mbps(entry.bandwidthMbps);
    emulation->set_latency_ms(entry.latencyMs);
  }
  return request;
}

WatchEnd Coordinator::Impl::watchJobs(const Placement& placement, const std::string& jobId,
                                      core::MetricSink* sink, const std::atomic<bool>* cancel,
                                      std::mutex& mutex, std::vector<core::RunEvent>& events,
                                      const EventAdder& addEvent,
                                      std::vector<RankEnd>& ends) const {
  struct Watch {
    std::unique_ptr<grpc::ClientContext> context;
    Clock::time_point last = Clock::now();
    bool broken = false;
    RankEnd end;  // finished, abandoned, error and result as the merge reads them
  };
  const std::size_t world = placement.world();
  std::vector<Watch> watches(world);
  for (std::size_t i = 0; i < world; ++i) watches[i].end.name = placement.rankNames[i];
  std::vector<std::thread> readers;
  std::condition_variable changed;
  for (std::size_t i = 0; i < world; ++i) {
    watches[i].context = std::make_unique<grpc::ClientContext>();
    prepareClientContext(*watches[i].context, token(placement.ranks[i].node),
                         std::chrono::duration_cast<std::chrono::milliseconds>(kStreamDeadline));
    readers.emplace_back([&, i] {
      pb::WatchJobRequest request;
      request.set_protocol_version(kProtocolVersion);
      request.set_job_id(jobId);
      request.set_slot(placement.ranks[i].slot);
      auto reader =
          nodes[placement.ranks[i].node].stub->WatchJob(watches[i].context.get(), request);
      pb::JobUpdate update;
      while (reader->Read(&update)) {
        std::lock_guard lock(mutex);
        watches[i].last = Clock::now();
        if (sink != nullptr) {
          for (const auto& p : update.steps()) sink->onStep(toCore(p));
          for (const auto& e : update.evals()) sink->onEval(toCore(e));
          for (const auto& n : update.node_samples()) sink->onNode(toCore(n, static_cast<int>(i)));
        }
        for (const auto& e : update.events()) {
          core::RunEvent event{e.step(), e.wall_ms(), e.kind(), e.detail()};
          if (sink != nullptr) sink->onEvent(event);
          if (event.kind != "finish") events.push_back(std::move(event));
        }
        if (update.finished()) {
          watches[i].end.finished = true;
          watches[i].end.result = update.result();
        }
        changed.notify_all();
      }
      const grpc::Status status = reader->Finish();
      std::lock_guard lock(mutex);
      if (!watches[i].end.finished) {
        watches[i].broken = true;
        watches[i].end.error = "its stream broke (" + describeStatus(status) + ")";
      }
      changed.notify_all();
    });
  }

  // Watchdog: a lost node or a failed job ends the run at once (the others abort their
  // communication); a user's cancel is forwarded politely. Either way the nodes that have
  // not reported their end by `windDown` later are left behind.
  // Cancels go out on threads of their own: a stopped node would hold a call for its whole
  // deadline, and the others must hear of it now.
  std::vector<std::thread> cancels;
  auto sendCancel = [&](std::size_t i, bool abort) {
    const std::size_t node = placement.ranks[i].node;
    cancels.emplace_back([this, node, jobId, abort] { cancelJob(node, jobId, abort); });
  };
  std::string lostNode;
  bool failing = false;
  bool cancelSent = false;
  std::optional<Clock::time_point> giveUpAt;
  auto ended = [](const Watch& w) { return w.end.finished || w.broken || w.end.abandoned; };
  {
    std::unique_lock lock(mutex);
    while (!std::all_of(watches.begin(), watches.end(), ended)) {
      if (!failing) {
        for (std::size_t i = 0; i < world && !failing; ++i) {
          Watch& w = watches[i];
          const bool failed = w.end.finished && core::readRunStatus(w.end.result.status()) ==
                                                    core::RunStatus::kFailed;
          const bool silent = !w.end.finished && Clock::now() - w.last > options.lostAfter;
          if (!failed && !w.broken && !silent) continue;
          failing = true;
          if (!failed) {
            lostNode = placement.rankNames[i] + " lost: " +
                       (w.broken ? w.end.error
                                 : "no heartbeat for " + std::to_string(options.lostAfter.count()) +
                                       " ms");
            addEvent(0, "node_lost", lostNode);
            if (!w.broken) w.context->TryCancel();
          }
          for (std::size_t j = 0; j < world; ++j)
            if (j != i) sendCancel(j, true);
          giveUpAt = Clock::now() + options.windDown;
        }
      }
      if (!cancelSent && !failing && cancel != nullptr && cancel->load()) {
        cancelSent = true;
        for (std::size_t i = 0; i < world; ++i) sendCancel(i, false);
        giveUpAt = Clock::now() + options.windDown;
      }
      if (giveUpAt && Clock::now() >= *giveUpAt) {
        for (Watch& w : watches) {
          if (ended(w)) continue;
          w.end.abandoned = true;
          w.context->TryCancel();
        }
        break;
      }
      changed.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  for (std::thread& t : readers) t.join();
  for (std::thread& t : cancels) t.join();

  ends.clear();
  for (Watch& w : watches) ends.push_back(std::move(w.end));
  return {lostNode, failing, cancelSent, options.windDown};
}

void Coordinator::Impl::startJobs(const Placement& placement, const std::string& jobId,
                                  const std::string& specJson, int variant) const {
  std::size_t started = 0;
  try {
    for (; started < placement.world(); ++started) {
      const std::size_t node = placement.ranks[started].node;
      grpc::ClientContext context;
      prepare(context, node, std::chrono::milliseconds(10000));
      const pb::StartJobRequest request =
          startRequest(placement, started, jobId, specJson, variant);
      pb::StartJobResponse response;
      const grpc::Status status = nodes[node].stub->StartJob(&context, request, &response);
      if (!status.ok())
        throw Error("starting the job on " + placement.rankNames[started] + ": " +
                    describeStatus(status));
    }
  } catch (...) {
    for (std::size_t i = 0; i < started; ++i) cancelJob(placement.ranks[i].node, jobId, true);
    throw;
  }
}

Coordinator::Coordinator(std::vector<std::string> addresses, CoordinatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (!impl_->options.emulation.empty() && impl_->options.emulation.size() != addresses.size())
    throw Error("per-node emulation for " + std::to_string(impl_->options.emulation.size()) +
                " nodes, but " + std::to_string(addresses.size()) + " node addresses");
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    impl_->nodes.push_back({addresses[i], "node" + std::to_string(i),
                            pb::NodeService::NewStub(channelTo(addresses[i]))});
  }
}

Coordinator::~Coordinator() = default;

std::vector<NodeSummary> Coordinator::connect() {
  if (impl_->nodes.empty()) throw Error("no nodes to run on");
  std::vector<NodeSummary> out;
  for (std::size_t i = 0; i < impl_->nodes.size(); ++i) {
    NodeSummary s = getInfo(*impl_->nodes[i].stub, impl_->nodes[i].address, impl_->token(i),
                            impl_->options.callDeadline);
    s.name = impl_->nodes[i].name;
    const bool emulates = std::find(s.capabilities.begin(), s.capabilities.end(),
                                    kJobEmulationCapability) != s.capabilities.end();
    if (!impl_->options.emulation.empty() && !emulates)
      throw Error("node " + s.address + " (dtlab-node " + s.programVersion +
                  ") cannot apply the topology's per-node speed, bandwidth and latency: update "
                  "it to this version of dtlab-node");
    out.push_back(s);
  }
  impl_->summaries = out;
  return out;
}

NodeSummary queryNode(const std::string& address, const std::string& token,
                      std::chrono::milliseconds deadline) {
  auto stub = pb::NodeService::NewStub(channelTo(address));
  return getInfo(*stub, address, token, deadline);
}

core::RunSummary Coordinator::run(const core::ExperimentSpec& spec, int variant,
                                  core::MetricSink* sink, const std::atomic<bool>* cancel) {
  Impl& impl = *impl_;
  if (impl.summaries.size() != impl.nodes.size()) connect();
  const core::VariantConfig& chosen = spec.variants.at(static_cast<std::size_t>(variant));
  // a. Place the ranks (every check that can refuse the run is made here, before any job).
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < impl.nodes.size(); ++i) labels.push_back(impl.label(i));
  const Placement placement = placeRun(spec, variant, impl.summaries, labels);
  const std::string jobId = newJobId();
  const std::string specJson = core::toJson(spec).dump();
  const Clock::time_point start = Clock::now();
  const std::string strategy = core::strategyOf(chosen).name;

  core::RunSummary summary;
  summary.name = chosen.name.empty() ? strategy : chosen.name;
  summary.strategy = strategy;
  std::mutex mutex;  // guards sink calls, summary.events and the per-node state below
  auto addEvent = [&](int64_t step, std::string kind, std::string detail) {
    core::RunEvent e{step, std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                     std::move(kind), std::move(detail)};
    if (sink != nullptr) sink->onEvent(e);
    summary.events.push_back(std::move(e));
  };
  // Workers that share a host's cores: the run says so, its timings measure that too.
  for (const std::string& host : placement.contention) {
    summary.contended = true;
    addEvent(0, "contention", host);
  }
  // b. Start everywhere (or nowhere).
  impl.startJobs(placement, jobId, specJson, variant);

  // c. Watch every rank to its end; a lost node or a failed rank ends the run.
  std::vector<RankEnd> ends;
  const WatchEnd watched =
      impl.watchJobs(placement, jobId, sink, cancel, mutex, summary.events, addEvent, ends);

  // d. Merge.
  mergeRankEnds(ends, watched, summary);
  if (const core::SettingValue* partition = chosen.settings.find("partition"))
    summary.partition = core::settingText(*partition);
  summary.rebalances = std::count_if(summary.events.begin(), summary.events.end(),
                                     [](const core::RunEvent& e) { return e.kind == "rebalance"; });
  summary.switches =
      std::count_if(summary.events.begin(), summary.events.end(),
                    [](const core::RunEvent& e) { return e.kind == "strategy_switch"; });
  summary.wallS = std::chrono::duration<double>(Clock::now() - start).count();
  addEvent(summary.steps, "finish",
           std::string(core::toString(summary.status)) + " (" + core::toString(summary.stopReason) +
               ")");
  return summary;
}

}  // namespace dtlab::remote
