#include "remote/coordinator/dispatch.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "core/comm/elastic_group.h"
#include "core/common/check.h"
#include "core/metrics/event_facts.h"
#include "core/train/checkpoint.h"
#include "remote/common/auth.h"
#include "remote/common/blob_parts.h"
#include "remote/common/client.h"
#include "remote/common/metric_wire.h"
#include "remote/common/protocol.h"
#include "remote/common/tls_credentials.h"
#include "remote/coordinator/node_summary.h"
#include "remote/coordinator/stream_blobs.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {

namespace pb = dtlab::remote::proto;
using Clock = std::chrono::steady_clock;

static_assert(static_cast<int>(ReserveAction::kRelease) == pb::ReserveRequest::RELEASE &&
              static_cast<int>(ReserveAction::kUncommit) == pb::ReserveRequest::UNCOMMIT &&
              static_cast<int>(ReserveAction::kCommit) == pb::ReserveRequest::COMMIT);
static_assert(static_cast<int>(ReserveAnswer::State::kReleased) == pb::ReserveResponse::RELEASED &&
              static_cast<int>(ReserveAnswer::State::kCommitted) ==
                  pb::ReserveResponse::COMMITTED &&
              static_cast<int>(ReserveAnswer::State::kHeld) == pb::ReserveResponse::HELD);

namespace {

// WatchJob streams live as long as the run; liveness comes from heartbeats, so their
// deadline is only a backstop against a leaked call.
constexpr auto kStreamDeadline = std::chrono::hours(24 * 7);

std::shared_ptr<grpc::Channel> channelTo(const std::string& address, const TlsFiles& tls) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(16 << 20);
  return grpc::CreateCustomChannel(address, channelCredentials(tls), args);
}

// GetInfo with a deadline, its protocol version checked.
NodeSummary getInfo(pb::NodeService::Stub& stub, const std::string& address,
                    const std::string& token, std::chrono::milliseconds deadline, bool tls) {
  grpc::ClientContext context;
  prepareClientContext(context, token, deadline);
  pb::GetInfoRequest request;
  request.set_protocol_version(kProtocolVersion);
  pb::NodeInfo info;
  const grpc::Status status = stub.GetInfo(&context, request, &info);
  if (!status.ok()) throw Error("node " + address + ": " + describeStatus(status, address, tls));
  if (info.protocol_version() != kProtocolVersion)
    throw Error("node " + address + " speaks protocol " + std::to_string(info.protocol_version()) +
                ", this coordinator " + std::to_string(kProtocolVersion) + ": update one of them");
  return nodeSummaryOf(info, address);
}

}  // namespace

ContinueBy continueByOf(const core::StrategyTraits& traits) {
  if (!traits.usesParameterServer) return ContinueBy::kRegroup;
  return traits.needsCollectiveGroup ? ContinueBy::kLeavingShardsWhileAsync
                                     : ContinueBy::kLeavingShards;
}

struct NodeLinks::Impl {
  struct Node {
    std::string address;
    std::string name;
    std::unique_ptr<pb::NodeService::Stub> stub;
    std::unique_ptr<pb::ParameterServer::Stub> ps;  // the shard it serves, if any
  };
  std::vector<Node> nodes;
  CoordinatorOptions options;
  bool linksEmulated = false;

  const std::string& token(std::size_t i) const {
    const auto it = options.nodeTokens.find(nodes[i].address);
    return it == options.nodeTokens.end() ? options.token : it->second;
  }
  void prepare(grpc::ClientContext& context, std::size_t i,
               std::chrono::milliseconds deadline) const {
    prepareClientContext(context, token(i), deadline);
  }
  // Tells every shard (shard k on node k) that `worker` has left the job, as the worker itself
  // does when it finishes: nobody waits for it any more. Returns the shards that did not
  // answer, by name.
  std::vector<std::string> leaveShards(std::size_t shards, const std::string& jobId,
                                       int worker) const;
  // Tells node i who goes on (RegroupJob). Errors are ignored: a survivor that does not hear
  // it is found lost in its turn (its group does not form).
  void regroupJob(std::size_t i, const std::string& jobId, uint32_t generation,
                  const std::vector<int>& members, const std::string& rendezvous) const;
  pb::StartJobRequest startRequest(const Placement& placement, std::size_t rank,
                                   const std::string& jobId, const std::string& specJson,
                                   int variant, std::span<const unsigned char> resume) const;
  // Hands node i the checkpoint job `jobId` continues from, in parts (StageCheckpoint);
  // throws Error naming the node and the node's reason.
  void stageCheckpoint(std::size_t i, const std::string& jobId,
                       std::span<const unsigned char> checkpoint) const;
};

pb::StartJobRequest NodeLinks::Impl::startRequest(const Placement& placement, std::size_t rank,
                                                  const std::string& jobId,
                                                  const std::string& specJson, int variant,
                                                  std::span<const unsigned char> resume) const {
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
  request.set_links_emulated(linksEmulated);
  request.set_resume_staged(!resume.empty());
  request.set_owner(ownerOfThisProcess());
  request.set_run_name(runNameOf(specJson, variant));
  return request;
}

void NodeLinks::Impl::stageCheckpoint(std::size_t node, const std::string& jobId,
                                      std::span<const unsigned char> checkpoint) const {
  // Long enough for a slow link: 30 s and 20 MB/s.
  const auto deadline = std::chrono::milliseconds(30000 + checkpoint.size() / 20000);
  grpc::ClientContext context;
  prepare(context, node, deadline);
  pb::StageCheckpointResponse response;
  std::unique_ptr<grpc::ClientWriter<pb::CheckpointPart>> writer =
      nodes[node].stub->StageCheckpoint(&context, &response);
  pb::CheckpointPart part;
  part.set_protocol_version(kProtocolVersion);
  part.set_job_id(jobId);
  part.set_total_bytes(checkpoint.size());
  bool written = true;
  forEachPart(checkpoint, kCheckpointPartBytes,
              [&](uint64_t offset, std::span<const unsigned char> bytes) {
                if (!written) return;
                part.set_offset(offset);
                part.set_data(bytes.data(), bytes.size());
                written = writer->Write(part);
              });
  if (written) writer->WritesDone();
  const grpc::Status status = writer->Finish();  // the node's own word when a write failed
  if (!status.ok())
    throw Error("handing the checkpoint (" + std::to_string(checkpoint.size() >> 20) + " MiB) to " +
                nodes[node].name + " (" + nodes[node].address + "): " + describeStatus(status));
}

std::vector<std::string> NodeLinks::Impl::leaveShards(std::size_t shards, const std::string& jobId,
                                                      int worker) const {
  std::vector<std::string> silent;
  for (std::size_t k = 0; k < shards && k < nodes.size(); ++k) {
    grpc::ClientContext context;
    prepare(context, k, std::chrono::milliseconds(3000));
    pb::PsLeaveRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(jobId);
    request.set_worker(worker);
    pb::PsLeaveResponse response;
    if (!nodes[k].ps->Leave(&context, request, &response).ok()) silent.push_back(nodes[k].name);
  }
  return silent;
}

void NodeLinks::Impl::regroupJob(std::size_t i, const std::string& jobId, uint32_t generation,
                                 const std::vector<int>& members,
                                 const std::string& rendezvous) const {
  grpc::ClientContext context;
  prepare(context, i, std::chrono::milliseconds(3000));
  pb::RegroupJobRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_job_id(jobId);
  request.set_generation(generation);
  for (int m : members) request.add_members(m);
  request.set_rendezvous_address(rendezvous);
  pb::RegroupJobResponse response;
  static_cast<void>(nodes[i].stub->RegroupJob(&context, request, &response));
}

NodeLinks::NodeLinks(std::vector<std::string> addresses, CoordinatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    const auto channel = channelTo(addresses[i], impl_->options.tls);
    impl_->nodes.push_back({addresses[i], "node" + std::to_string(i),
                            pb::NodeService::NewStub(channel),
                            pb::ParameterServer::NewStub(channel)});
  }
}

NodeLinks::~NodeLinks() = default;

std::size_t NodeLinks::size() const {
  return impl_->nodes.size();
}
const std::string& NodeLinks::address(std::size_t node) const {
  return impl_->nodes.at(node).address;
}
const std::string& NodeLinks::name(std::size_t node) const {
  return impl_->nodes.at(node).name;
}
std::string NodeLinks::label(std::size_t node) const {
  return name(node) + " (" + address(node) + ")";
}
const CoordinatorOptions& NodeLinks::options() const {
  return impl_->options;
}
void NodeLinks::setLinksEmulated(bool emulated) {
  impl_->linksEmulated = emulated;
}

NodeSummary NodeLinks::info(std::size_t node) const {
  NodeSummary s = getInfo(*impl_->nodes.at(node).stub, address(node), impl_->token(node),
                          impl_->options.callDeadline, impl_->options.tls.enabled());
  s.name = name(node);
  return s;
}

void NodeLinks::cancelJob(std::size_t node, const std::string& jobId, bool abort) const {
  grpc::ClientContext context;
  impl_->prepare(context, node, std::chrono::milliseconds(1000));
  pb::CancelJobRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_job_id(jobId);
  request.set_abort(abort);
  pb::CancelJobResponse response;
  static_cast<void>(impl_->nodes[node].stub->CancelJob(&context, request, &response));
}

NodeLinks::JobState NodeLinks::jobState(std::size_t node, const std::string& jobId) const {
  grpc::ClientContext context;
  impl_->prepare(context, node, std::chrono::milliseconds(1000));
  pb::GetInfoRequest request;
  request.set_protocol_version(kProtocolVersion);
  pb::NodeInfo info;
  const grpc::Status status = impl_->nodes[node].stub->GetInfo(&context, request, &info);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return JobState::kUnreachable;
  if (!status.ok()) return JobState::kSilent;
  return info.busy() && info.job_id() == jobId ? JobState::kRunning : JobState::kEnded;
}

ReserveAnswer NodeLinks::reserve(std::size_t node, const ReserveClaim& claim, ReserveAction action,
                                 std::chrono::milliseconds deadline) const {
  grpc::ClientContext context;
  impl_->prepare(context, node, deadline);
  pb::ReserveRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_reservation_id(claim.id);
  request.set_ticket(claim.ticket);
  request.set_owner(claim.owner);
  request.set_run_name(claim.run);
  request.set_lease_ms(static_cast<uint32_t>(claim.lease.count()));
  // The wire's enums in the same order as ours (checked below).
  request.set_action(static_cast<pb::ReserveRequest::Action>(action));
  pb::ReserveResponse response;
  const grpc::Status status = impl_->nodes.at(node).stub->Reserve(&context, request, &response);
  if (!status.ok())
    throw Error("reserving " + label(node) + ": " +
                describeStatus(status, address(node), impl_->options.tls.enabled()));
  ReserveAnswer answer;
  answer.state = static_cast<ReserveAnswer::State>(response.state());
  answer.position = static_cast<int>(response.position());
  answer.waiting = static_cast<int>(response.waiting());
  answer.jobId = response.job_id();
  answer.jobOwner = response.job_owner();
  answer.jobRun = response.job_run();
  answer.jobSeconds = response.job_seconds();
  answer.holderOwner = response.holder_owner();
  answer.holderRun = response.holder_run();
  answer.holderCommitted = response.holder_committed();
  return answer;
}

void NodeLinks::startJobs(const Placement& placement, const std::string& jobId,
                          const std::string& specJson, int variant,
                          const std::string& reservationId, std::span<const unsigned char> resume,
                          std::optional<double> clockStartMs) const {
  const Impl& impl = *impl_;
  std::size_t started = 0;
  if (!resume.empty()) {
    // Each node of the run gets the checkpoint once, whatever its ranks there.
    std::vector<std::size_t> staged;
    for (const RankSlot& r : placement.ranks) {
      if (std::find(staged.begin(), staged.end(), r.node) != staged.end()) continue;
      impl.stageCheckpoint(r.node, jobId, resume);
      staged.push_back(r.node);
    }
  }
  try {
    for (; started < placement.world(); ++started) {
      const std::size_t node = placement.ranks[started].node;
      grpc::ClientContext context;
      impl.prepare(context, node, std::chrono::milliseconds(10000));
      pb::StartJobRequest request =
          impl.startRequest(placement, started, jobId, specJson, variant, resume);
      if (clockStartMs) request.set_clock_start_ms(*clockStartMs);
      request.set_reservation_id(reservationId);
      pb::StartJobResponse response;
      const grpc::Status status = impl.nodes[node].stub->StartJob(&context, request, &response);
      if (!status.ok())
        throw Error("starting the job on " + placement.rankNames[started] + ": " +
                    describeStatus(status));
    }
  } catch (...) {
    for (std::size_t i = 0; i < started; ++i) cancelJob(placement.ranks[i].node, jobId, true);
    throw;
  }
}

namespace {

// One rank's stream as the watch follows it.
struct RankWatch {
  std::unique_ptr<grpc::ClientContext> context;
  // When the node was last heard: a message arrived, or the reader finished handling one.
  // While the reader handles a message (joining and checking a checkpoint of hundreds of MB,
  // waiting for the lock the other streams share while one of them stores), the node is not
  // silent: the wait is this coordinator's, and its stream is not being read meanwhile.
  // Atomic: the watchdog reads both without waiting for a reader to let go of the lock.
  std::atomic<Clock::time_point> last{Clock::now()};
  std::atomic<bool> handling{false};
  bool broken = false;
  RankEnd end;  // finished, abandoned, error and result as the merge reads them

  bool ended() const { return end.finished || broken || end.abandoned || end.dropped; }
  void arrived() {
    handling = true;
    last = Clock::now();
  }
  void handled() {
    last = Clock::now();
    handling = false;
  }
  bool silentFor(std::chrono::milliseconds limit) const {
    return !handling && Clock::now() - last.load() > limit;
  }
};

// Rank 0's newest checkpoint goes to the sink only once every rank's stream has delivered its
// points up to that rank's step in the checkpoint (or ended): a stored checkpoint never runs
// ahead of any rank's stored points, so a resume finds each series whole up to it. Under
// WatchOutputs::mutex. The newest released one is kept for a restart after a loss.
struct CheckpointGate {
  explicit CheckpointGate(std::size_t world) : delivered(world, 0), ended(world, false) {}
  std::vector<int64_t> delivered;  // each rank's last step point handed to the sink
  std::vector<bool> ended;
  // Oldest first, up to kQueuedCheckpointBytes (remote/common/blob_parts.h).
  std::deque<CheckedCheckpoint> pending;
  std::size_t pendingBytes = 0;
  std::shared_ptr<const std::vector<unsigned char>> released;  // the newest released
  int64_t releasedStep = 0;
  bool sawStep = false;  // a step point has arrived

  void add(CheckedCheckpoint checkpoint) {
    pendingBytes += checkpoint.bytes->size();
    pending.push_back(std::move(checkpoint));
    while (pending.size() > 1 && pendingBytes > kQueuedCheckpointBytes) {
      pendingBytes -= pending.front().bytes->size();
      pending.pop_front();
    }
  }
  // Hands the sink each pending checkpoint, in order, once every rank's points up to it have
  // been handed over.
  void release(core::MetricSink* sink) {
    while (!pending.empty()) {
      const CheckedCheckpoint& c = pending.front();
      for (std::size_t r = 0; r < delivered.size(); ++r)
        if (!ended[r] && delivered[r] < c.layout.stepOf(r)) return;
      if (sink != nullptr) sink->onEncodedCheckpoint({c.layout.step, c.layout.wallMs, c.bytes});
      released = c.bytes;
      releasedStep = c.layout.step;
      pendingBytes -= c.bytes->size();
      pending.pop_front();
    }
  }
  int64_t lastStep() const { return *std::max_element(delivered.begin(), delivered.end()); }
};

// What the watch follows across the ranks' streams, under WatchOutputs::mutex.
struct WatchState {
  explicit WatchState(std::size_t world) : gate(world) {}
  CheckpointGate gate;
  bool asynchronous = false;  // a hybrid's phase, from its switch events
  // Survivors told to re-form their group, until its leader reports it formed: who was lost
  // and when the first of them was last heard.
  std::string regroupLost;
  std::optional<Clock::time_point> regroupSince;
  uint32_t generation = 0;  // of the newest group the survivors were told to form
};

// Reads rank i's WatchJob stream to its end into `w`, delivering what it reports to `out`.
void readStream(pb::NodeService::Stub& stub, const std::string& jobId, int slot, std::size_t i,
                RankWatch& w, const WatchOutputs& out, WatchState& state,
                std::condition_variable& changed) {
  CheckpointGate& gate = state.gate;
  pb::WatchJobRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_job_id(jobId);
  request.set_slot(slot);
  auto reader = stub.WatchJob(w.context.get(), request);
  pb::JobUpdate update;
  StreamBlobs blobs;
  while (reader->Read(&update)) {
    w.arrived();
    // Joined and decoded (a checksum over the whole checkpoint) before the lock that the
    // other ranks' streams wait on.
    JoinedBlobs joined = blobs.join(update, w.end.name);
    std::lock_guard lock(out.mutex);
    if (!gate.sawStep && update.steps_size() > 0 && out.firstStep)
      out.firstStep(update.steps(0).step());
    gate.sawStep = gate.sawStep || update.steps_size() > 0;
    for (const auto& p : update.steps()) gate.delivered[i] = std::max(gate.delivered[i], p.step());
    if (out.sink != nullptr) {
      for (const auto& p : update.steps()) out.sink->onStep(toCore(p));
      for (const auto& e : update.evals()) out.sink->onEval(toCore(e));
      for (const auto& n : update.node_samples()) out.sink->onNode(toCore(n, static_cast<int>(i)));
    }
    for (const auto& e : update.events()) {
      core::RunEvent event{e.step(), e.wall_ms(), e.kind(), e.detail(), e.data()};
      if (const std::optional<core::PhaseFacts> phase = core::phaseFactsOf(event))
        state.asynchronous = phase->asynchronous;
      if (event.kind == core::kRegroupEvent && state.regroupSince && out.recovered) {
        // The coordinator's "recovery" says it, with the lost node and the time it took.
        out.recovered(event.step,
                      std::chrono::duration<double>(Clock::now() - *state.regroupSince).count(), 0,
                      state.regroupLost + "; " + event.detail);
        state.regroupSince.reset();
        state.regroupLost.clear();
        continue;
      }
      if (out.sink != nullptr) out.sink->onEvent(event);
      if (event.kind != "finish") out.events.push_back(std::move(event));
    }
    for (const core::RunEvent& note : joined.notes)
      if (out.sink != nullptr) out.sink->onEvent(note);
    // Stored as the node encoded them (a replay decodes and checks them).
    for (const std::vector<unsigned char>& chunk : joined.records)
      if (out.sink != nullptr) out.sink->onPsRecords(chunk);
    for (CheckedCheckpoint& checkpoint : joined.checkpoints) gate.add(std::move(checkpoint));
    gate.release(out.sink);
    if (update.finished()) {
      w.end.finished = true;
      w.end.result = update.result();
    }
    w.handled();
    changed.notify_all();
  }
  const grpc::Status status = reader->Finish();
  std::lock_guard lock(out.mutex);
  gate.ended[i] = true;
  gate.release(out.sink);
  if (!w.end.finished) {
    w.broken = true;
    w.end.error = "its stream broke (" + describeStatus(status) + ")";
    // A checkpoint cut off on its way is no checkpoint: the run keeps the one before.
    if (const std::size_t joinedBytes = blobs.checkpointParts.joined();
        joinedBytes > 0 && out.sink != nullptr)
      out.sink->onEvent({gate.lastStep(), 0.0, std::string(core::kCheckpointNotKeptEvent),
                         "a checkpoint from " + w.end.name +
                             " was not kept: its stream broke after " +
                             std::to_string(joinedBytes) + " bytes of it had arrived (" +
                             describeStatus(status) + ")"});
  }
  changed.notify_all();
}

}  // namespace

WatchEnd NodeLinks::watchJobs(const Placement& placement, const std::string& jobId,
                              const std::atomic<bool>* cancel, const WatchOutputs& out,
                              std::vector<RankEnd>& ends) const {
  const CoordinatorOptions& options = impl_->options;
  const std::size_t world = placement.world();
  std::vector<RankWatch> watches(world);
  std::vector<std::thread> readers;
  std::condition_variable changed;
  WatchState state(world);
  CheckpointGate& gate = state.gate;
  for (std::size_t i = 0; i < world; ++i) {
    const std::size_t node = placement.ranks[i].node;
    watches[i].end.name = placement.rankNames[i];
    watches[i].context = std::make_unique<grpc::ClientContext>();
    prepareClientContext(*watches[i].context, impl_->token(node),
                         std::chrono::duration_cast<std::chrono::milliseconds>(kStreamDeadline));
    readers.emplace_back([&, i, node] {
      readStream(*impl_->nodes[node].stub, jobId, placement.ranks[i].slot, i, watches[i], out,
                 state, changed);
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
  // "continue": the ranks of a lost node that serves no shard are dropped, and the others go
  // on: told who is left (RegroupJob, on threads of their own as the cancels), or leaving the
  // shards for the dropped ranks; the recovery is reported when the group has re-formed, or
  // when the shards have heard.
  const std::size_t shards = placement.psAddresses.size();
  auto canDrop = [&](std::size_t i) {
    if (out.onNodeLoss != core::NodeLossPolicy::kContinue || placement.ranks[i].node < shards)
      return false;
    if (out.continueBy == ContinueBy::kLeavingShardsWhileAsync && !state.asynchronous) return false;
    for (std::size_t j = 0; j < world; ++j)
      if (placement.ranks[j].node != placement.ranks[i].node && !watches[j].end.dropped)
        return true;
    return false;
  };
  // The facts of rank i's lost node: its stream broke (with its error), else it went silent.
  auto lossFacts = [&](std::size_t i, bool broke) {
    const std::size_t node = placement.ranks[i].node;
    return core::NodeLossFacts{
        .rank = static_cast<int>(i),
        .node = placement.rankNames[i],
        .cause = broke ? core::NodeLossFacts::Cause::kStreamBroke
                       : core::NodeLossFacts::Cause::kNoHeartbeat,
        .error = broke ? watches[i].end.error : std::string(),
        .silentMs = broke ? 0 : static_cast<int64_t>(options.lostAfter.count()),
        .shard = node < shards ? static_cast<int>(node) : -1};
  };
  auto drop = [&](std::size_t i, const std::string& lost, core::NodeLossFacts facts) {
    // Every rank of the node goes with it (its daemon is one process).
    std::vector<std::size_t> gone;
    for (std::size_t j = 0; j < world; ++j)
      if (placement.ranks[j].node == placement.ranks[i].node && !watches[j].end.dropped)
        gone.push_back(j);
    Clock::time_point lastHeard = watches[i].last.load();
    for (std::size_t j : gone) {
      RankWatch& w = watches[j];
      w.end.dropped = true;
      if (!w.broken) w.context->TryCancel();
      lastHeard = std::min(lastHeard, w.last.load());
    }
    const int64_t step = gate.lastStep();
    std::vector<int> members;
    for (std::size_t j = 0; j < world; ++j)
      if (!watches[j].end.dropped) members.push_back(static_cast<int>(j));
    const auto others = members.size();
    facts.outcome = core::NodeLossFacts::Outcome::kOthersGoOn;
    out.addEvent(step, std::string(core::kNodeLostEvent),
                 lost + "; the other " + std::to_string(others) +
                     (others == 1 ? " worker goes on" : " workers go on") +
                     " (on_node_loss: continue)",
                 core::eventData(facts));
    sendCancel(i, true);  // a stopped node that wakes up must not push again
    if (out.continueBy == ContinueBy::kRegroup) {
      const uint32_t generation = ++state.generation;
      if (!state.regroupSince) state.regroupSince = lastHeard;
      state.regroupLost +=
          (state.regroupLost.empty() ? "" : "; ") + placement.rankNames[i] + " lost";
      const std::string rendezvous = placement.rankAddresses[static_cast<std::size_t>(members[0])];
      std::vector<std::size_t> nodes;
      for (int m : members) nodes.push_back(placement.ranks[static_cast<std::size_t>(m)].node);
      std::sort(nodes.begin(), nodes.end());
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      for (std::size_t node : nodes)
        cancels.emplace_back([this, node, jobId, generation, members, rendezvous] {
          impl_->regroupJob(node, jobId, generation, members, rendezvous);
        });
      return;
    }
    const std::string name = placement.rankNames[i];
    cancels.emplace_back([this, &out, shards, jobId, gone, step, lastHeard, name] {
      std::vector<std::string> silent;
      for (std::size_t j : gone) {
        const std::vector<std::string> missed =
            impl_->leaveShards(shards, jobId, static_cast<int>(j));
        silent.insert(silent.end(), missed.begin(), missed.end());
      }
      std::lock_guard lock(out.mutex);
      const double seconds = std::chrono::duration<double>(Clock::now() - lastHeard).count();
      std::string detail = "rank " + std::to_string(gone.front()) + " (" + name +
                           ") left the parameter server; no update is lost (every push it made "
                           "is on the server)";
      for (const std::string& shard : silent) detail += "; " + shard + " did not hear of it";
      if (out.recovered) out.recovered(step, seconds, 0, detail);
    });
  };
  std::string lostNode;
  bool restartable = false;
  std::optional<std::size_t> lostRank;
  Clock::time_point lostLastHeard{};
  bool failing = false;
  bool cancelSent = false;
  std::optional<Clock::time_point> giveUpAt;
  std::optional<Clock::time_point> failureSeenAt;  // a job's failure, held back (below)
  const bool survivable = out.onNodeLoss != core::NodeLossPolicy::kFail;
  auto ended = [](const RankWatch& w) { return w.ended(); };
  {
    std::unique_lock lock(out.mutex);
    while (!std::all_of(watches.begin(), watches.end(), ended)) {
      if (!failing) {
        for (std::size_t i = 0; i < world && !failing; ++i) {
          RankWatch& w = watches[i];
          if (w.end.dropped) continue;
          const bool failed = w.end.finished && core::readRunStatus(w.end.result.status()) ==
                                                    core::RunStatus::kFailed;
          const bool silent = !w.end.finished && w.silentFor(options.lostAfter);
          if (!failed && !w.broken && !silent) continue;
          if (failed && !w.broken && !silent && survivable) {
            // A job may fail because another node is lost (a pull from a dead shard fails at
            // once, before this watchdog sees that node's stream break): the others get up
            // to lostAfter to show a lost node, which the policy then handles; only then
            // does the failure end the run.
            if (!failureSeenAt) failureSeenAt = Clock::now();
            bool othersOpen = false;  // running, or broken and not yet seen here
            for (std::size_t j = 0; j < world; ++j) {
              const RankEnd& e = watches[j].end;
              othersOpen = othersOpen || (j != i && !e.finished && !e.dropped && !e.abandoned);
            }
            if (othersOpen && Clock::now() - *failureSeenAt < options.lostAfter) continue;
          }
          const std::string lost =
              failed ? std::string()
                     : placement.rankNames[i] + " lost: " +
                           (w.broken ? w.end.error
                                     : "no heartbeat for " +
                                           std::to_string(options.lostAfter.count()) + " ms");
          core::NodeLossFacts facts = lossFacts(i, w.broken);
          if (!failed && canDrop(i)) {
            drop(i, lost, std::move(facts));
            continue;
          }
          failing = true;
          if (!failed) {
            lostNode = lost;
            lostRank = i;
            lostLastHeard = w.last.load();
            // "continue" that cannot go on in place (a shard's blocks lost with its node, or
            // the hybrid's group in use) restarts from the newest checkpoint, if there is one.
            const bool continues = out.onNodeLoss == core::NodeLossPolicy::kContinue;
            const bool hasCheckpoint = out.hadCheckpoint || gate.released != nullptr;
            const bool shardLost = continues && placement.ranks[i].node < shards;
            const bool groupInUse = continues && !shardLost &&
                                    out.continueBy == ContinueBy::kLeavingShardsWhileAsync &&
                                    !state.asynchronous;
            restartable = (shardLost || groupInUse) && hasCheckpoint;
            if (shardLost)
              lostNode +=
                  "; it served parameter-server shard " + std::to_string(placement.ranks[i].node) +
                  (hasCheckpoint          ? std::string()
                   : out.keepsCheckpoints ? ", whose blocks have no checkpoint yet (training."
                                            "checkpoint_every or checkpoint_seconds keeps them)"
                                          : ", whose blocks are kept nowhere else");
            else if (groupInUse)
              lostNode +=
                  "; the run was training synchronously, and continues without a lost node "
                  "only while it trains asynchronously";
            if (restartable)
              lostNode +=
                  ": the run restarts on the other nodes from its newest checkpoint "
                  "(on_node_loss: continue)";
            else if (shardLost)
              lostNode += ", so the run cannot continue";
            const bool groupRestarts = out.onNodeLoss == core::NodeLossPolicy::kRestart &&
                                       placement.ranks.front().node != placement.ranks.back().node;
            facts.outcome = restartable     ? core::NodeLossFacts::Outcome::kRestartsFromCheckpoint
                            : groupRestarts ? core::NodeLossFacts::Outcome::kGroupRestarts
                                            : core::NodeLossFacts::Outcome::kRunFails;
            out.addEvent(gate.lastStep(), std::string(core::kNodeLostEvent),
                         groupRestarts ? lostNode +
                                             "; the group restarts on the other nodes "
                                             "(on_node_loss: restart)"
                                       : lostNode,
                         core::eventData(facts));
            if (!w.broken) w.context->TryCancel();
          }
          // Every rank, the lost one too: a node whose stream broke may be alive and still
          // training (what is not heard here is settled before the next start).
          for (std::size_t j = 0; j < world; ++j) sendCancel(j, true);
          giveUpAt = Clock::now() + options.windDown;
        }
      }
      if (!cancelSent && !failing && cancel != nullptr && cancel->load()) {
        cancelSent = true;
        for (std::size_t i = 0; i < world; ++i) sendCancel(i, false);
        giveUpAt = Clock::now() + options.windDown;
      }
      if (giveUpAt && Clock::now() >= *giveUpAt) {
        for (RankWatch& w : watches) {
          if (w.ended()) continue;
          w.end.abandoned = true;
          w.context->TryCancel();
        }
        break;
      }
      changed.wait_for(lock, std::chrono::milliseconds(50));
    }
    // A node lost as the run ended: its stream broke as the others finished, before the
    // watchdog looked. Nothing is left to continue or restart: the run's outcome stands.
    if (!failing && !cancelSent) {
      std::vector<RankEnd> sofar;
      std::vector<std::size_t> nodeOf;
      for (std::size_t i = 0; i < world; ++i) {
        sofar.push_back(watches[i].end);
        nodeOf.push_back(placement.ranks[i].node);
      }
      for (std::size_t i : lostAsTheRunEnded(sofar, nodeOf)) {
        watches[i].end.dropped = true;
        core::NodeLossFacts facts = lossFacts(i, /*broke=*/true);
        facts.outcome = core::NodeLossFacts::Outcome::kRunHadEnded;
        out.addEvent(gate.lastStep(), std::string(core::kNodeLostEvent),
                     placement.rankNames[i] + " lost as the run ended: " + watches[i].end.error +
                         "; every rank on the other nodes had completed, so the run's outcome "
                         "stands without this rank's own figures",
                     core::eventData(facts));
      }
    }
  }
  for (std::thread& t : readers) t.join();
  for (std::thread& t : cancels) t.join();

  ends.clear();
  for (RankWatch& w : watches) ends.push_back(std::move(w.end));
  return {lostNode,      failing,         cancelSent,    options.windDown,  lostRank,
          lostLastHeard, gate.lastStep(), gate.released, gate.releasedStep, restartable};
}

NodeSummary queryNode(const std::string& address, const std::string& token,
                      std::chrono::milliseconds deadline, const TlsFiles& tls) {
  auto stub = pb::NodeService::NewStub(channelTo(address, tls));
  return getInfo(*stub, address, token, deadline, tls.enabled());
}

}  // namespace dtlab::remote
