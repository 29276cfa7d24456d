#include "remote/node/parameter_service.h"

#include "core/train/ps_encoding.h"

#include <cstring>
#include <limits>
#include <vector>

#include "remote/common/auth.h"
#include "remote/common/large_field.h"
#include "remote/common/protocol.h"
#include "remote/node/parameter_stream.h"

namespace dtlab::remote {

namespace {

grpc::ServerUnaryReactor* finishNow(grpc::CallbackServerContext* context,
                                    const grpc::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

// The block `index` of the host, or INVALID_ARGUMENT / NOT_FOUND naming it.
grpc::Status blockOf(core::ParameterHost& host, int index, core::ParameterBlock*& block) {
  block = host.block(index);
  if (block == nullptr)
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "block: " + std::to_string(index) + " is not served by this node"};
  return grpc::Status::OK;
}

grpc::Status checkPayload(const char* field, std::size_t bytes, const core::PsBlock& block) {
  const std::size_t expected = static_cast<std::size_t>(block.size()) * sizeof(float);
  if (bytes != expected)
    return invalid(std::string(field) + ": block [" + std::to_string(block.begin) + ", " +
                   std::to_string(block.end) + ") takes " + std::to_string(expected) +
                   " bytes, got " + std::to_string(bytes));
  return grpc::Status::OK;
}

grpc::Status checkWorker(const core::ParameterHost& host, int worker) {
  if (worker < 0 || worker >= host.workers())
    return invalid("worker: must be in [0, " + std::to_string(host.workers()) + "), got " +
                   std::to_string(worker));
  return grpc::Status::OK;
}

grpc::Status asStatus(const std::exception& e) {
  return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
}

// A WaitClock the board answers later. The board may call back on another thread at the same
// moment the call is cancelled: the shared state makes Finish happen exactly once, and never
// after gRPC deleted the reactor.
class ClockWaitReactor final : public grpc::ServerUnaryReactor {
 public:
  struct State {
    std::mutex mutex;
    ClockWaitReactor* reactor = nullptr;  // null once finished
    uint64_t waitId = 0;                  // the board's id of the pending wait
  };

  explicit ClockWaitReactor(std::shared_ptr<core::ParameterHost> host)
      : host_(std::move(host)), state_(std::make_shared<State>()) {
    state_->reactor = this;
  }

  // May finish before it returns (the slowest is there already): touches only locals after.
  void start(int64_t clock) {
    std::shared_ptr<State> state = state_;
    const uint64_t id =
        host_->board()->whenClockReached(clock, [state] { finishOnce(*state, grpc::Status::OK); });
    std::lock_guard<std::mutex> lock(state->mutex);
    state->waitId = id;
  }

  void OnCancel() override {
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      id = state_->waitId;
    }
    if (id != 0) host_->board()->cancelWait(id);
    finishOnce(*state_, {grpc::StatusCode::CANCELLED, "the wait was cancelled"});
  }
  void OnDone() override { delete this; }

 private:
  static void finishOnce(State& state, const grpc::Status& status) {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.reactor == nullptr) return;
    ClockWaitReactor* reactor = state.reactor;
    state.reactor = nullptr;
    reactor->Finish(status);
  }

  std::shared_ptr<core::ParameterHost> host_;
  std::shared_ptr<State> state_;
};

}  // namespace

void toProto(const core::BoardState& state, proto::PsBoard& out) {
  out.clear_votes();
  for (float v : state.votes.values) out.add_votes(v);
  out.set_total_pushes(state.totalPushes);
  out.set_min_clock(state.minClock == std::numeric_limits<int64_t>::max() ? -1 : state.minClock);
  out.set_straggler_ratio(state.stragglerRatio);
  out.set_end_phase(state.endPhase);
  out.set_end_ratio(state.endRatio);
}

core::BoardState fromProto(const proto::PsBoard& board) {
  core::BoardState state;
  for (int i = 0; i < board.votes_size() && i < core::Votes::kCount; ++i)
    state.votes.values[static_cast<std::size_t>(i)] = board.votes(i);
  state.totalPushes = board.total_pushes();
  state.minClock = board.min_clock() < 0 ? std::numeric_limits<int64_t>::max() : board.min_clock();
  state.stragglerRatio = board.straggler_ratio();
  state.endPhase = board.end_phase();
  state.endRatio = board.end_ratio();
  return state;
}

ParameterService::ParameterService(ParameterTable& table, std::string token,
                                   ParameterStreamServer* stream)
    : table_(table), token_(std::move(token)), stream_(stream) {}

grpc::Status ParameterService::hostFor(grpc::CallbackServerContext& context,
                                       uint32_t protocolVersion, const std::string& jobId,
                                       std::shared_ptr<core::ParameterHost>& host) {
  grpc::Status status = checkBearerToken(context, token_);
  if (status.ok()) status = checkProtocolVersion(protocolVersion);
  if (!status.ok()) return status;
  host = table_.find(jobId);
  if (!host)
    return {grpc::StatusCode::NOT_FOUND,
            "job_id: this node serves no parameter shard of job '" + jobId + "' (yet)"};
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ParameterService::Init(grpc::CallbackServerContext* context,
                                                 const proto::PsInitRequest* request,
                                                 proto::PsInitResponse* /*response*/) {
  std::shared_ptr<core::ParameterHost> host;
  core::ParameterBlock* block = nullptr;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok()) status = blockOf(*host, request->block(), block);
  if (status.ok()) status = checkPayload("values", request->values().size(), block->block());
  if (status.ok()) {
    try {
      const auto* values = reinterpret_cast<const float*>(request->values().data());
      if (request->epoch() > 0)
        block->reset(values, block->block().size(), request->version(), request->epoch());
      else
        block->init(values, block->block().size());
    } catch (const std::exception& e) {
      status = asStatus(e);
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::Pull(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* requestBytes,
                                                 grpc::ByteBuffer* responseBytes) {
  proto::PsPullRequest request;
  std::shared_ptr<core::ParameterHost> host;
  core::ParameterBlock* block = nullptr;
  // The token first: a caller without it learns nothing, not even whether its bytes parse.
  grpc::Status status = checkBearerToken(*context, token_);
  if (status.ok() && !fromByteBuffer(*requestBytes, request))
    status = invalid("the request is not a PsPullRequest");
  if (status.ok()) status = hostFor(*context, request.protocol_version(), request.job_id(), host);
  if (status.ok()) status = blockOf(*host, request.block(), block);
  core::PsEncoding encoding = core::PsEncoding::kFloat32;
  if (status.ok()) {
    try {
      encoding = core::psEncodingFromWire(request.encoding());
      if (encoding == core::PsEncoding::kSparse)
        throw Error("parameters are pulled as float32, fp16 or bf16, not sparse");
    } catch (const std::exception& e) {
      status = invalid(std::string("encoding: ") + e.what());
    }
  }
  if (status.ok() && encoding != core::PsEncoding::kFloat32) {
    try {
      // A compressing variant's pull: the block's values as 16-bit floats.
      std::vector<float> values(static_cast<std::size_t>(block->block().size()));
      proto::PsPullResponse response;
      response.set_version(block->pull(values.data()));
      core::encodeValues(encoding, values.data(), block->block().size(),
                         *response.mutable_values());
      *responseBytes = toByteBuffer(response);
    } catch (const std::exception& e) {
      status = asStatus(e);
    }
  } else if (status.ok()) {
    try {
      LargeField values(static_cast<std::size_t>(block->block().size()) * sizeof(float));
      proto::PsPullResponse response;
      response.set_version(block->pull(reinterpret_cast<float*>(values.data())));
      *responseBytes =
          serializeWithLargeField(response, proto::PsPullResponse::kValuesFieldNumber, values);
    } catch (const std::exception& e) {
      status = asStatus(e);
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::Push(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* requestBytes,
                                                 grpc::ByteBuffer* responseBytes) {
  // The gradient lands here, aligned, straight from gRPC's buffers; it grows to the largest
  // block this thread has seen and is reused by every push after.
  thread_local std::vector<float> gradient;
  std::size_t gradientBytes = 0;
  proto::PsPushRequest request;
  std::shared_ptr<core::ParameterHost> host;
  core::ParameterBlock* block = nullptr;
  grpc::Status status = checkBearerToken(*context, token_);
  if (status.ok()) {
    const std::string why = parseWithLargeField(
        *requestBytes, proto::PsPushRequest::kGradientFieldNumber, request,
        [&](google::protobuf::io::CodedInputStream& in, int bytes) -> std::string {
          const std::size_t floats = (static_cast<std::size_t>(bytes) + 3) / sizeof(float);
          if (gradient.size() < floats) gradient.resize(floats);
          gradientBytes = static_cast<std::size_t>(bytes);
          return in.ReadRaw(gradient.data(), bytes) ? "" : "gradient: cut short";
        });
    if (!why.empty()) status = invalid("the request is not a PsPushRequest: " + why);
  }
  if (status.ok()) status = hostFor(*context, request.protocol_version(), request.job_id(), host);
  if (status.ok()) status = blockOf(*host, request.block(), block);
  // A compressing variant's gradient (fp16, bf16, sparse) is decoded first.
  thread_local std::vector<float> decoded;
  const float* values = gradient.data();
  if (status.ok() && request.encoding() != 0) {
    try {
      const core::PsEncoding encoding = core::psEncodingFromWire(request.encoding());
      decoded.resize(static_cast<std::size_t>(block->block().size()));
      core::decodeValues(
          encoding, std::string_view(reinterpret_cast<const char*>(gradient.data()), gradientBytes),
          decoded.data(), block->block().size());
      values = decoded.data();
    } catch (const std::exception& e) {
      status = invalid(std::string("gradient: ") + e.what());
    }
  } else if (status.ok()) {
    status = checkPayload("gradient", gradientBytes, block->block());
  }
  if (status.ok() && request.based_on() < 0)
    status = invalid("based_on: must be >= 0, got " + std::to_string(request.based_on()));
  if (status.ok()) {
    try {
      proto::PsPushResponse response;
      response.set_applied_to(block->push(values, block->block().size(), request.based_on()));
      *responseBytes = toByteBuffer(response);
    } catch (const std::exception& e) {
      status = invalid(std::string("based_on: ") + e.what());
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::Report(grpc::CallbackServerContext* context,
                                                   const proto::PsReportRequest* request,
                                                   proto::PsBoard* response) {
  std::shared_ptr<core::ParameterHost> host;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok() && host->board() == nullptr)
    status = invalid("job_id: this node does not keep the board of job '" + request->job_id() +
                     "' (shard 0 does)");
  if (status.ok()) status = checkWorker(*host, request->worker());
  if (status.ok() && request->clock() < 0)
    status = invalid("clock: must be >= 0, got " + std::to_string(request->clock()));
  if (status.ok() && request->votes_size() > core::Votes::kCount)
    status = invalid("votes: at most " + std::to_string(core::Votes::kCount) + ", got " +
                     std::to_string(request->votes_size()));
  if (status.ok()) {
    core::WorkerReport report;
    report.worker = request->worker();
    report.clock = request->clock();
    for (int i = 0; i < request->votes_size(); ++i)
      report.votes.values[static_cast<std::size_t>(i)] = request->votes(i);
    report.computeMs = request->compute_ms();
    report.phase = request->phase();
    toProto(host->board()->report(report), *response);
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::WaitClock(grpc::CallbackServerContext* context,
                                                      const proto::PsWaitRequest* request,
                                                      proto::PsWaitResponse* /*response*/) {
  std::shared_ptr<core::ParameterHost> host;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok() && host->board() == nullptr)
    status = invalid("job_id: this node does not keep the board of job '" + request->job_id() +
                     "' (shard 0 does)");
  if (!status.ok()) return finishNow(context, status);
  auto* reactor = new ClockWaitReactor(host);
  reactor->start(request->clock());
  return reactor;
}

grpc::ServerUnaryReactor* ParameterService::Leave(grpc::CallbackServerContext* context,
                                                  const proto::PsLeaveRequest* request,
                                                  proto::PsLeaveResponse* /*response*/) {
  std::shared_ptr<core::ParameterHost> host;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok()) status = checkWorker(*host, request->worker());
  if (status.ok()) host->leave(request->worker());
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::Snapshot(grpc::CallbackServerContext* context,
                                                     const proto::PsSnapshotRequest* request,
                                                     proto::PsSnapshotResponse* response) {
  std::shared_ptr<core::ParameterHost> host;
  core::ParameterBlock* block = nullptr;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok()) status = blockOf(*host, request->block(), block);
  if (status.ok()) {
    try {
      if (request->mode() == proto::PsSnapshotRequest::STAGE) {
        response->set_version(host->stageSnapshot(request->block()));
      } else {
        host->readStagedSnapshot(request->block(), [&](const core::ParameterBlock::Snapshot& s,
                                                       const std::vector<int64_t>& clocks) {
          auto bytesOf = [](const std::vector<float>& v) {
            return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
          };
          response->set_version(s.version);
          response->set_values(bytesOf(s.params));
          for (const std::vector<float>& part : s.optimizerState)
            response->add_optimizer_state(bytesOf(part));
          for (int64_t clock : clocks) response->add_clocks(clock);
        });
      }
    } catch (const std::exception& e) {
      status = asStatus(e);
    }
  }
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* ParameterService::OpenStream(grpc::CallbackServerContext* context,
                                                       const proto::PsStreamRequest* request,
                                                       proto::PsStreamResponse* response) {
  std::shared_ptr<core::ParameterHost> host;
  grpc::Status status = hostFor(*context, request->protocol_version(), request->job_id(), host);
  if (status.ok() && stream_ == nullptr)
    status = {grpc::StatusCode::FAILED_PRECONDITION,
              "this node serves pulls and pushes over gRPC only (it serves TLS, or has no stream)"};
  if (status.ok()) {
    try {
      response->set_port(stream_->port());
      response->set_ticket(stream_->ticket(request->job_id()));
    } catch (const std::exception& e) {
      status = {grpc::StatusCode::INTERNAL, e.what()};
    }
  }
  return finishNow(context, status);
}

}  // namespace dtlab::remote
