#include "remote/node/node_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/backend/backend.h"
#include "core/common/config.h"
#include "core/common/log.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/checkpoint.h"
#include "core/train/local_trainer.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy_registry.h"
#include "remote/common/auth.h"
#include "remote/common/protocol.h"

namespace dtlab::remote {

namespace {

constexpr uint64_t kMinHeartbeatMs = 10;
constexpr uint64_t kMaxHeartbeatMs = 60000;
constexpr uint64_t kMinConnectTimeoutMs = 100;
constexpr uint64_t kMaxConnectTimeoutMs = 3600 * 1000;
constexpr uint32_t kMinLeaseMs = 1000;
constexpr uint32_t kMaxLeaseMs = 120 * 1000;

grpc::ServerUnaryReactor* finishNow(grpc::CallbackServerContext* context,
                                    const grpc::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// A WatchJob refused before it started streaming.
class RefusedWatch final : public grpc::ServerWriteReactor<proto::JobUpdate> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

std::string hostName() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

int coreCount() {
  return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "cpu";
}

// Job ids become rendezvous key prefixes and appear in logs: keep them printable.
// Reservation ids follow the same rule.
grpc::Status checkJobId(const std::string& id, const std::string& field = "job_id") {
  if (id.empty()) return invalid(field + ": must not be empty");
  if (grpc::Status s = checkFieldSize(field, id.size(), kMaxJobIdBytes); !s.ok()) return s;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return invalid(field + ": only letters, digits and - _ . : are allowed");
  }
  return grpc::Status::OK;
}

bool isWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::";
}

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

NodeService::NodeService(const NodeOptions& options, std::string listenHost,
                         RendezvousTable& rendezvous, WatchHub& hub, ParameterTable& parameters)
    : options_(options),
      listenHost_(std::move(listenHost)),
      rendezvous_(rendezvous),
      parameters_(parameters),
      hub_(hub) {}

int NodeService::slotsFor(const core::ExperimentSpec& spec) const {
  return spec.cluster.device == "cuda" ? static_cast<int>(options_.gpus.size()) : options_.slots;
}

std::shared_ptr<Job> NodeService::jobAt(const std::string& id, int slot) const {
  if (id != jobId_ || slot < 0 || slot >= static_cast<int>(jobs_.size())) return nullptr;
  return jobs_[static_cast<std::size_t>(slot)];
}

bool NodeService::anyRunning() const {
  return std::any_of(jobs_.begin(), jobs_.end(),
                     [](const std::shared_ptr<Job>& job) { return job && job->running(); });
}

NodeService::~NodeService() = default;

void NodeService::setName(std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  name_ = std::move(name);
}

std::string NodeService::name() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return name_;
}

grpc::ServerUnaryReactor* NodeService::GetInfo(grpc::CallbackServerContext* context,
                                               const proto::GetInfoRequest* request,
                                               proto::NodeInfo* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) fillInfo(*response);
  return finishNow(context, status);
}

void NodeService::fillInfo(proto::NodeInfo& info) {
  static const std::string host = hostName();
  static const std::string model = cpuModel();
  const int cores = coreCount();
  info.set_protocol_version(kProtocolVersion);
  info.set_program_version(DTLAB_VERSION);
  info.set_hostname(host);
  proto::DeviceInfo* cpu = info.add_devices();
  cpu->set_name("cpu");
  cpu->set_kind("cpu");
  cpu->set_slots(options_.slots);
  cpu->set_detail(model + ", " + std::to_string(cores) + " cores, " +
                  std::to_string(options_.threads) + " worker threads");
  for (const core::DeviceDescription& d : options_.gpus) {
    proto::DeviceInfo* gpu = info.add_devices();
    gpu->set_name(d.name);
    gpu->set_kind("cuda");
    gpu->set_slots(1);
    gpu->set_memory_bytes(d.memoryBytes);
    gpu->set_compute_capability(d.computeCapability);
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB",
                  static_cast<double>(d.memoryBytes) / (1024.0 * 1024.0 * 1024.0));
    gpu->set_detail(d.model + ", " + memory + ", compute capability " + d.computeCapability);
  }
  info.set_speed(options_.speed);
  info.set_bandwidth_mbps(options_.bandwidthMbps);
  info.set_latency_ms(options_.latencyMs);
  double load[1] = {0.0};
  info.set_load(getloadavg(load, 1) == 1 ? load[0] / cores : 0.0);
  info.add_capabilities("gloo");
  info.add_capabilities(std::string(kJobEmulationCapability));
  for (const std::string& strategy : core::strategyNames()) info.add_capabilities(strategy);
  info.set_advertise_host(advertiseHost());
  info.set_cores(cores);
  info.set_worker_threads(options_.threads);
  info.set_rendezvous_waiters(static_cast<uint32_t>(rendezvous_.pendingWaiters()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (anyRunning()) {
    info.set_busy(true);
    info.set_job_id(jobId_);
    info.set_job_owner(jobOwner_);
    info.set_job_run(jobRun_);
    info.set_job_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - jobStarted_).count());
  }
  for (const ReservationQueue::Entry& e : reservations_.entries(std::chrono::steady_clock::now())) {
    proto::QueuedRun* run = info.add_reservations();
    run->set_owner(e.claim.owner);
    run->set_run_name(e.claim.run);
    run->set_holds(e.holds);
    run->set_seconds(e.seconds);
  }
}

grpc::ServerUnaryReactor* NodeService::StartJob(grpc::CallbackServerContext* context,
                                                const proto::StartJobRequest* request,
                                                proto::StartJobResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) {
    try {
      status = startJob(*request);
    } catch (const std::exception& e) {
      status = {grpc::StatusCode::INTERNAL, std::string("starting the job failed: ") + e.what()};
    }
  }
  if (status.ok()) {
    response->set_job_id(request->job_id());
  } else {
    logAt(LogLevel::kInfo, "StartJob refused: ", describeStatus(status));
  }
  return finishNow(context, status);
}

// The request's own fields, checked before anything costs a spec parse.
grpc::Status NodeService::checkStartRequest(const proto::StartJobRequest& request) const {
  // Cheap checks first: a malformed request must not cost a spec parse.
  if (grpc::Status s = checkJobId(request.job_id()); !s.ok()) return s;
  if (grpc::Status s = checkFieldSize("spec_json", request.spec_json().size(), kMaxSpecJsonBytes);
      !s.ok())
    return s;
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{
                                         "rendezvous_address", &request.rendezvous_address()},
                                     {"reached_host", &request.reached_host()},
                                     {"node_name", &request.node_name()}}) {
    if (grpc::Status s = checkFieldSize(field, value->size(), kMaxAddressBytes); !s.ok()) return s;
  }
  const int world = request.world_size();
  if (world < 1 || world > kMaxWorldSize)
    return invalid("world_size: must be in [1, " + std::to_string(kMaxWorldSize) + "], got " +
                   std::to_string(world));
  if (request.rank() < 0 || request.rank() >= world)
    return invalid("rank: must be in [0, world_size) = [0, " + std::to_string(world) + "), got " +
                   std::to_string(request.rank()));
  const uint64_t heartbeatMs =
      request.heartbeat_ms() == 0 ? kDefaultHeartbeat.count() : request.heartbeat_ms();
  if (heartbeatMs < kMinHeartbeatMs || heartbeatMs > kMaxHeartbeatMs)
    return invalid("heartbeat_ms: must be 0 (default 1000) or in [" +
                   std::to_string(kMinHeartbeatMs) + ", " + std::to_string(kMaxHeartbeatMs) +
                   "], got " + std::to_string(request.heartbeat_ms()));
  const uint64_t connectMs = request.connect_timeout_ms();
  if (connectMs != 0 && (connectMs < kMinConnectTimeoutMs || connectMs > kMaxConnectTimeoutMs))
    return invalid("connect_timeout_ms: must be 0 (the node's default) or in [" +
                   std::to_string(kMinConnectTimeoutMs) + ", " +
                   std::to_string(kMaxConnectTimeoutMs) + "], got " + std::to_string(connectMs));
  if (world > 1) {
    if (request.rendezvous_address().empty())
      return invalid("rendezvous_address: required when world_size > 1");
    try {
      parseHostPort(request.rendezvous_address(), "rendezvous_address");
    } catch (const std::exception& e) {
      return invalid(e.what());
    }
  }

  if (request.has_emulation()) {
    const proto::NodeEmulation& e = request.emulation();
    if (!(e.speed() > 0.0 && e.speed() <= 1000.0))
      return invalid("emulation.speed: must be in (0, 1000], got " + std::to_string(e.speed()));
    if (!(e.bandwidth_mbps() >= 0.0 && std::isfinite(e.bandwidth_mbps())))
      return invalid("emulation.bandwidth_mbps: must be >= 0 (0: unlimited), got " +
                     std::to_string(e.bandwidth_mbps()));
    if (!(e.latency_ms() >= 0.0 && e.latency_ms() <= 10000.0))
      return invalid("emulation.latency_ms: must be in [0, 10000], got " +
                     std::to_string(e.latency_ms()));
  }

  return grpc::Status::OK;
}

// The spec, and what it asks of this node: a GPU for a cuda run, the slot, the variant.
grpc::Status NodeService::parseStartSpec(const proto::StartJobRequest& request,
                                         core::ExperimentSpec& spec) const {
  try {
    spec = core::parseExperimentSpecText(request.spec_json());
  } catch (const core::SpecError& e) {
    return invalid(e.what());  // "optimizer.lr: must be > 0, got -1": names the field path
  } catch (const std::exception& e) {
    return invalid(std::string("spec_json: ") + e.what());
  }
  if (spec.cluster.device == "cuda" && options_.gpus.empty())
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "node " + name() +
                " has no GPU for cluster.device \"cuda\": it was started with --devices cpu "
                "(start it with --devices cuda:N, or use cluster.device \"cpu\")"};
  const int slots = slotsFor(spec);
  if (request.slot() < 0 || request.slot() >= slots)
    return invalid("slot: must be in [0, " + std::to_string(slots) + ") (node " + name() + " has " +
                   std::to_string(slots) + " worker slot" + (slots == 1 ? "" : "s") +
                   " for cluster.device \"" + spec.cluster.device + "\"), got " +
                   std::to_string(request.slot()));
  const int variants = static_cast<int>(spec.variants.size());
  if (request.variant() < 0 || request.variant() >= variants)
    return invalid("variant: must be in [0, " + std::to_string(variants) + ") (the spec has " +
                   std::to_string(variants) + " variants), got " +
                   std::to_string(request.variant()));

  return grpc::Status::OK;
}

// Parameter-server variants: where the shards are, and this node's shard if it has one.
grpc::Status NodeService::prepareShards(const proto::StartJobRequest& request,
                                        const core::ExperimentSpec& spec, JobSettings& settings,
                                        std::shared_ptr<core::ParameterHost>& shardHost) const {
  const int world = request.world_size();
  std::vector<std::string> psAddresses(request.ps_addresses().begin(),
                                       request.ps_addresses().end());
  std::vector<std::string> psNames(request.ps_names().begin(), request.ps_names().end());
  const core::VariantConfig& chosen = spec.variants[static_cast<std::size_t>(request.variant())];
  if (core::strategyOf(chosen).traits.usesParameterServer && world > 1) {
    const int shards = core::psShardCount(chosen, world);
    if (static_cast<int>(psAddresses.size()) != shards)
      return invalid("ps_addresses: the variant has " + std::to_string(shards) +
                     " parameter-server shards, got " + std::to_string(psAddresses.size()) +
                     " addresses");
    if (!psNames.empty() && psNames.size() != psAddresses.size())
      return invalid("ps_names: one per ps_addresses entry, got " + std::to_string(psNames.size()));
    for (const std::string& address : psAddresses) {
      if (grpc::Status s = checkFieldSize("ps_addresses", address.size(), kMaxAddressBytes);
          !s.ok())
        return s;
      try {
        parseHostPort(address, "ps_addresses");
      } catch (const std::exception& e) {
        return invalid(e.what());
      }
    }
    if (request.rank() < shards) {
      try {
        const int64_t global = spec.training.batchSize;
        shardHost = core::makeParameterHost(
            spec, request.variant(), world, request.rank(),
            core::plannedSteps(spec, spec.dataset.trainSize / std::max<int64_t>(global, 1)));
      } catch (const std::exception& e) {
        return invalid(std::string("spec_json: cannot serve parameter shard ") +
                       std::to_string(request.rank()) + ": " + e.what());
      }
    }
  }

  settings.psAddresses = std::move(psAddresses);
  settings.psNames = std::move(psNames);
  return grpc::Status::OK;
}

// What the job runs with: the request's rank, slot and emulation over this daemon's own flags.
void NodeService::fillJobSettings(const proto::StartJobRequest& request, core::ExperimentSpec spec,
                                  JobSettings& settings) const {
  const int world = request.world_size();
  const uint64_t heartbeatMs =
      request.heartbeat_ms() == 0 ? kDefaultHeartbeat.count() : request.heartbeat_ms();
  const uint64_t connectMs = request.connect_timeout_ms();
  const std::string nodeName = name();
  settings.jobId = request.job_id();
  settings.nodeName = request.node_name().empty() ? nodeName : request.node_name();
  settings.work.spec = std::move(spec);
  settings.work.variant = request.variant();
  settings.work.rank = request.rank();
  settings.work.world = world;
  settings.work.node.speed = options_.speed;
  settings.work.node.bandwidthMbps = options_.bandwidthMbps;
  settings.work.node.latencyMs = options_.latencyMs;
  settings.work.threads = options_.threads;
  settings.work.device = settings.work.spec.cluster.device == "cuda"
                             ? options_.gpus[static_cast<std::size_t>(request.slot())].name
                             : "cpu";
  settings.rendezvousAddress = request.rendezvous_address();
  settings.token = options_.token;
  const std::string advertised = advertiseHost();
  settings.collectiveAddress = !advertised.empty()               ? advertised
                               : !request.reached_host().empty() ? request.reached_host()
                                                                 : hostName();
  settings.bandwidthMbps = options_.bandwidthMbps;
  settings.latencyMs = options_.latencyMs;
  settings.linksEmulated = request.links_emulated();
  if (request.has_emulation()) {
    // The spec's entry for this node: a topology describes its nodes completely.
    settings.work.node.speed = request.emulation().speed();
    settings.work.node.bandwidthMbps = request.emulation().bandwidth_mbps();
    settings.work.node.latencyMs = request.emulation().latency_ms();
    settings.bandwidthMbps = request.emulation().bandwidth_mbps();
    settings.latencyMs = request.emulation().latency_ms();
  }
  // A speed that changes during the run and straggler pauses: the spec's entry for this rank
  // (one entry: every node's) when it has them, else this daemon's flags.
  settings.work.node.speedSchedule = options_.speedSchedule;
  settings.work.node.straggler = options_.straggler;
  const core::ClusterConfig& cluster = settings.work.spec.cluster;
  if (cluster.nodes.size() == 1 ||
      static_cast<std::size_t>(request.node_index()) < cluster.nodes.size()) {
    const core::NodeConfig& entry =
        cluster.node(cluster.nodes.size() == 1 ? 0 : request.node_index());
    if (!entry.speedSchedule.empty()) settings.work.node.speedSchedule = entry.speedSchedule;
    if (entry.straggler != core::StragglerConfig{}) settings.work.node.straggler = entry.straggler;
  }
  settings.heartbeat = std::chrono::milliseconds(heartbeatMs);
  settings.connectTimeout =
      connectMs != 0 ? std::chrono::milliseconds(connectMs) : options_.connectTimeout;
}

std::string NodeService::runningJobLocked() const {
  const auto seconds = static_cast<long long>(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - jobStarted_).count());
  return describeRun(jobOwner_, jobRun_, jobId_) + ", running for " + std::to_string(seconds) +
         " s";
}

grpc::Status NodeService::checkReservationLocked(const proto::StartJobRequest& request) {
  const auto now = std::chrono::steady_clock::now();
  const std::string& id = request.reservation_id();
  if (!id.empty()) {
    if (reservations_.committed(id, now)) return grpc::Status::OK;
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "node " + name_ + " is not reserved for this run (reservation " + id +
                "): its lease ran out, or it was never committed"};
  }
  // Another rank of a job already admitted here.
  if (jobId_ == request.job_id() && !jobs_.empty()) return grpc::Status::OK;
  const std::vector<ReservationQueue::Entry> entries = reservations_.entries(now);
  if (entries.empty()) return grpc::Status::OK;
  const ReservationQueue::Entry& first = entries.front();
  return {grpc::StatusCode::FAILED_PRECONDITION,
          "node " + name_ + " is " + (first.holds ? "reserved for " : "awaited by ") +
              describeRun(first.claim.owner, first.claim.run) +
              (entries.size() > 1 ? " and " + std::to_string(entries.size() - 1) + " more" : "") +
              ": a job needs a reservation there (StartJobRequest.reservation_id)"};
}

// Installs the job in its slot (a new job id first drops the last job's ranks, rendezvous
// keys and shards); refuses while shutting down or busy with another job.
grpc::Status NodeService::installJob(const proto::StartJobRequest& request, JobSettings settings,
                                     std::shared_ptr<core::ParameterHost> shardHost) {
  const int world = request.world_size();
  std::vector<std::shared_ptr<Job>> previous;
  const auto slot = static_cast<std::size_t>(request.slot());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shuttingDown_)
      return {grpc::StatusCode::UNAVAILABLE, "node " + name_ + " is shutting down"};
    if (jobId_ != request.job_id() && anyRunning())
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "node " + name_ + " is busy with " + runningJobLocked()};
    if (grpc::Status s = checkReservationLocked(request); !s.ok()) return s;
    if (jobAt(request.job_id(), request.slot()))
      return {grpc::StatusCode::ALREADY_EXISTS, "job_id: job " + request.job_id() +
                                                    " already ran in slot " +
                                                    std::to_string(request.slot()) + " on node " +
                                                    name_ + " (job ids must be unique per run)"};
    if (jobId_ != request.job_id()) {
      // A new job: the last one's ranks go, and its rendezvous keys (this job's may already be
      // here: ranks that started before this one), and its parameter shards.
      previous = std::move(jobs_);
      jobs_.clear();
      jobId_ = request.job_id();
      jobOwner_ = request.owner();
      jobRun_ = request.run_name();
      jobStarted_ = std::chrono::steady_clock::now();
      staged_.keepOnly(request.job_id());
      rendezvous_.clearExceptPrefix(request.job_id() + "/");
      parameters_.clear();
    }
    if (shardHost) {
      if (parameters_.find(request.job_id()) != nullptr)
        return invalid("slot: a parameter-server job takes one slot per node (node " + name_ +
                       " already serves a shard of job " + request.job_id() + ")");
      parameters_.install(request.job_id(), std::move(shardHost));
    }
    if (jobs_.size() <= slot) jobs_.resize(slot + 1);
    jobs_[slot] = std::make_shared<Job>(std::move(settings));
  }
  logAt(LogLevel::kInfo, "job ", request.job_id(), " accepted: rank ", request.rank(), " of ",
        world, " in slot ", request.slot(), ", variant ", request.variant(),
        request.has_emulation()
            ? ", emulating speed " + std::to_string(request.emulation().speed()) + ", " +
                  std::to_string(request.emulation().bandwidth_mbps()) + " Mbit/s, " +
                  std::to_string(request.emulation().latency_ms()) + " ms (the job's)"
            : std::string());
  // The previous job has published its result, so its threads are ending; join them outside
  // the lock (a watcher may still hold one, then the last owner joins).
  previous.clear();
  return grpc::Status::OK;
}

grpc::Status NodeService::startJob(const proto::StartJobRequest& request) {
  if (grpc::Status s = checkStartRequest(request); !s.ok()) return s;
  core::ExperimentSpec spec;
  if (grpc::Status s = parseStartSpec(request, spec); !s.ok()) return s;
  JobSettings settings;
  std::shared_ptr<core::ParameterHost> shardHost;
  if (grpc::Status s = prepareShards(request, spec, settings, shardHost); !s.ok()) return s;
  fillJobSettings(request, std::move(spec), settings);
  settings.tuningCache = &tuningCache_;
  if (request.resume_staged()) {
    settings.work.resumeFrom = staged_.find(request.job_id());
    if (!settings.work.resumeFrom)
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "resume_staged: no checkpoint is staged for job " + request.job_id() + " on node " +
                  name() + " (StageCheckpoint hands it over first)"};
    // A parameter-server run continues from its server's blocks: this node's shard starts
    // where the checkpoint left them, before any worker can reach it.
    if (shardHost) {
      try {
        shardHost->restore(*settings.work.resumeFrom);
      } catch (const std::exception& e) {
        return invalid("resume_staged: cannot seed parameter-server shard " +
                       std::to_string(request.rank()) + " from it: " + e.what());
      }
    }
  }
  if (request.has_clock_start_ms()) {
    const double ms = request.clock_start_ms();
    if (!std::isfinite(ms) || ms < 0.0 || ms > 1e12)
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "clock_start_ms: must be a time in ms from 0 to 1e12, got " + std::to_string(ms)};
    settings.work.clockStartMs = ms;
  }
  return installJob(request, std::move(settings), std::move(shardHost));
}

grpc::ServerReadReactor<proto::CheckpointPart>* NodeService::StageCheckpoint(
    grpc::CallbackServerContext* context, proto::StageCheckpointResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status.ok() && shuttingDown_)
      status = {grpc::StatusCode::UNAVAILABLE, "node " + name_ + " is shutting down"};
  }
  return stageCheckpoint(status, staged_, maxStagedCheckpointBytes(), response);
}

grpc::ServerWriteReactor<proto::JobUpdate>* NodeService::WatchJob(
    grpc::CallbackServerContext* context, const proto::WatchJobRequest* request) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = checkFieldSize("job_id", request->job_id().size(), kMaxJobIdBytes);
  if (!status.ok()) return new RefusedWatch(status);
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job = jobAt(request->job_id(), request->slot());
  }
  if (!job)
    return new RefusedWatch({grpc::StatusCode::NOT_FOUND, "node " + name() + " has no job '" +
                                                              request->job_id() + "' in slot " +
                                                              std::to_string(request->slot())});
  logAt(LogLevel::kDebug, "job ", job->id(), ": watcher attached");
  return hub_.watch(std::move(job));
}

grpc::ServerUnaryReactor* NodeService::CancelJob(grpc::CallbackServerContext* context,
                                                 const proto::CancelJobRequest* request,
                                                 proto::CancelJobResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = checkFieldSize("job_id", request->job_id().size(), kMaxJobIdBytes);
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (jobId_ == request->job_id()) {
      bool wasRunning = false;
      for (const std::shared_ptr<Job>& job : jobs_) {
        if (job)
          wasRunning |= job->cancel(request->abort(),
                                    request->abort() ? "aborted by the coordinator" : "cancelled");
      }
      response->set_was_running(wasRunning);
      if (wasRunning)
        logAt(LogLevel::kInfo, "job ", jobId_,
              request->abort() ? ": abort requested" : ": cancel requested");
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* NodeService::RegroupJob(grpc::CallbackServerContext* context,
                                                  const proto::RegroupJobRequest* request,
                                                  proto::RegroupJobResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = checkFieldSize("job_id", request->job_id().size(), kMaxJobIdBytes);
  if (status.ok())
    status = checkFieldSize("rendezvous_address", request->rendezvous_address().size(),
                            kMaxAddressBytes);
  if (status.ok() && (request->members().empty() || request->rendezvous_address().empty() ||
                      request->generation() == 0))
    status = {grpc::StatusCode::INVALID_ARGUMENT,
              "RegroupJob needs a generation above 0, members and a rendezvous_address"};
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (jobId_ == request->job_id()) {
      const GroupNotice notice{request->generation(),
                               {request->members().begin(), request->members().end()},
                               request->rendezvous_address()};
      bool wasRunning = false;
      for (const std::shared_ptr<Job>& job : jobs_) {
        if (!job || !job->running()) continue;
        if (const std::string refused = job->regroup(notice); !refused.empty()) {
          status = {grpc::StatusCode::INVALID_ARGUMENT, refused};
          break;
        }
        wasRunning = true;
      }
      response->set_was_running(wasRunning);
      if (wasRunning)
        logAt(LogLevel::kInfo, "job ", jobId_, ": regroup ", notice.generation, " of ",
              notice.members.size(), " ranks at ", notice.rendezvous);
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* NodeService::Ping(grpc::CallbackServerContext* context,
                                            const proto::PingRequest* request,
                                            proto::PingResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) response->set_unix_ms(unixMs());
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* NodeService::Reserve(grpc::CallbackServerContext* context,
                                               const proto::ReserveRequest* request,
                                               proto::ReserveResponse* response) {
  grpc::Status status = checkBearerToken(*context, options_.token);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = reserve(*request, *response);
  return finishNow(context, status);
}

grpc::Status NodeService::reserve(const proto::ReserveRequest& request,
                                  proto::ReserveResponse& response) {
  if (grpc::Status s = checkJobId(request.reservation_id(), "reservation_id"); !s.ok()) return s;
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"owner", &request.owner()},
        {"run_name", &request.run_name()}})
    if (grpc::Status s = checkFieldSize(field, value->size(), kMaxAddressBytes); !s.ok()) return s;
  if (request.lease_ms() < kMinLeaseMs || request.lease_ms() > kMaxLeaseMs)
    return invalid("lease_ms: must be in [" + std::to_string(kMinLeaseMs) + ", " +
                   std::to_string(kMaxLeaseMs) + "], got " + std::to_string(request.lease_ms()));
  const ReservationQueue::Claim claim{request.reservation_id(), request.ticket(), request.owner(),
                                      request.run_name(),
                                      std::chrono::milliseconds(request.lease_ms())};
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (shuttingDown_ && request.action() != proto::ReserveRequest::RELEASE)
    return {grpc::StatusCode::UNAVAILABLE, "node " + name_ + " is shutting down"};
  const bool busy = anyRunning();
  ReservationQueue::Standing standing;
  switch (request.action()) {
    case proto::ReserveRequest::COMMIT:
      standing = reservations_.commit(claim, busy, now);
      break;
    case proto::ReserveRequest::UNCOMMIT:
      standing = reservations_.uncommit(claim, busy, now);
      break;
    case proto::ReserveRequest::RELEASE:
      reservations_.release(claim.id, busy, now);
      response.set_state(proto::ReserveResponse::RELEASED);
      return grpc::Status::OK;
    default:
      standing = reservations_.wait(claim, busy, now);
  }
  switch (standing.state) {
    case ReservationQueue::State::kCommitted:
      response.set_state(proto::ReserveResponse::COMMITTED);
      return grpc::Status::OK;
    case ReservationQueue::State::kHeld:
      response.set_state(proto::ReserveResponse::HELD);
      return grpc::Status::OK;
    default:
      break;
  }
  response.set_state(proto::ReserveResponse::WAITING);
  response.set_position(static_cast<uint32_t>(standing.position));
  response.set_waiting(static_cast<uint32_t>(standing.waiting));
  if (busy) {
    response.set_job_id(jobId_);
    response.set_job_owner(jobOwner_);
    response.set_job_run(jobRun_);
    response.set_job_seconds(std::chrono::duration<double>(now - jobStarted_).count());
  }
  if (standing.holder) {
    response.set_holder_owner(standing.holder->owner);
    response.set_holder_run(standing.holder->run);
    response.set_holder_committed(standing.holderCommitted);
  }
  return grpc::Status::OK;
}

std::string NodeService::advertiseHost() const {
  if (!options_.advertise.empty()) return options_.advertise;
  return isWildcardHost(listenHost_) ? std::string() : listenHost_;
}

std::vector<std::shared_ptr<Job>> NodeService::beginShutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  shuttingDown_ = true;
  std::vector<std::shared_ptr<Job>> jobs;
  for (const std::shared_ptr<Job>& job : jobs_) {
    if (!job) continue;
    if (job->cancel())
      logAt(LogLevel::kInfo, "job ", job->id(), ": cancelled by the node's shutdown");
    jobs.push_back(job);
  }
  return jobs;
}

}  // namespace dtlab::remote
