#include "remote/node/parameter_client.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>

#include <grpcpp/generic/generic_stub.h>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"
#include "core/common/log.h"
#include "core/train/ps_encoding.h"
#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/large_field.h"
#include "remote/common/protocol.h"
#include "remote/common/tls.h"
#include "remote/node/parameter_service.h"

namespace dtlab::remote {

namespace {

using Clock = std::chrono::steady_clock;

// A WaitClock call lasts at most this long before the client asks again, so that an abort
// ends a wait within it.
constexpr std::chrono::milliseconds kWaitSlice{1000};
constexpr std::chrono::milliseconds kInitRetry{50};

// Counts callbacks of calls issued together and wakes the issuer when all are in.
class Latch {
 public:
  explicit Latch(std::size_t count) : left_(count) {}
  void done() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--left_ == 0) changed_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t left_;
};

// One call per block, issued at once, awaited together.
template <typename Request, typename Response>
struct Calls {
  explicit Calls(std::size_t n) : contexts(n), requests(n), responses(n), statuses(n), latch(n) {}
  std::vector<grpc::ClientContext> contexts;
  std::vector<Request> requests;
  std::vector<Response> responses;
  std::vector<grpc::Status> statuses;
  Latch latch;
};

// Issues one call per block at once, each prepared for its block (deadline, token; protocol,
// job and block number unless the request is a ByteBuffer) and started by `start(b, done)`, which
// may fill in more of request b (or call done(OK) at once for a block that goes another way);
// runs `meanwhile` (the streams' share), then returns when every call has ended (their
// statuses in calls.statuses), rethrowing what `meanwhile` threw.
template <typename Request, typename Response, typename Start>
void issueEachBlock(Calls<Request, Response>& calls, const ParameterClientOptions& options,
                    Start&& start, const std::function<void()>& meanwhile = {}) {
  for (std::size_t b = 0; b < calls.requests.size(); ++b) {
    prepareClientContext(calls.contexts[b], options.token, options.callTimeout);
    if constexpr (!std::is_same_v<Request, grpc::ByteBuffer>) {  // else made whole already
      calls.requests[b].set_protocol_version(kProtocolVersion);
      calls.requests[b].set_job_id(options.jobId);
      calls.requests[b].set_block(static_cast<int>(b));
    }
    start(b, [&calls, b](grpc::Status status) {
      calls.statuses[b] = std::move(status);
      calls.latch.done();
    });
  }
  std::exception_ptr failure;
  try {
    if (meanwhile) meanwhile();
  } catch (...) {
    failure = std::current_exception();
  }
  calls.latch.wait();  // the calls' callbacks use `calls` until then
  if (failure) std::rethrow_exception(failure);
}

// Cancels the calls of `contexts` when the job aborts (a lost peer, its coordinator gone), so
// that none waits out its deadline on a shard that is gone or stopped, or (Init) for one to
// come up. Handlers run under the signal's lock: TryCancel is quick.
core::AbortSignal::Registration cancelOnAbort(const core::AbortSignal* abort,
                                              grpc::ClientContext* contexts, std::size_t n) {
  if (abort == nullptr) return {};
  return abort->onAbort([contexts, n](const std::string&) {
    for (std::size_t i = 0; i < n; ++i) contexts[i].TryCancel();
  });
}

// The same for the streams of `shares`: shutting a socket down ends its exchange at once.
core::AbortSignal::Registration shutDownOnAbort(const core::AbortSignal* abort,
                                                const std::vector<StreamShare>& shares) {
  if (abort == nullptr || shares.empty()) return {};
  return abort->onAbort([&shares](const std::string&) {
    for (const StreamShare& share : shares) share.stream->socket().shutdown();
  });
}

// Which blocks go over a stream.
std::vector<char> overStreams(const std::vector<StreamShare>& shares, std::size_t blocks) {
  std::vector<char> via(blocks, 0);
  for (const StreamShare& share : shares)
    for (int b : share.blocks) via[static_cast<std::size_t>(b)] = 1;
  return via;
}

// A PsPullResponse for `block`: its values copied from gRPC's buffers into `params`, measuring
// how far they moved, and its version. Returns "" or what is wrong with the reply.
std::string takeValues(const grpc::ByteBuffer& reply, const core::PsBlock& block, float* params,
                       core::PullOutcome& outcome, int64_t& version) {
  const std::size_t expected = static_cast<std::size_t>(block.size()) * sizeof(float);
  proto::PsPullResponse head;
  bool seen = false;
  std::string why = parseWithLargeField(
      reply, proto::PsPullResponse::kValuesFieldNumber, head,
      [&](google::protobuf::io::CodedInputStream& in, int bytes) -> std::string {
        if (static_cast<std::size_t>(bytes) != expected)
          return "a block of " + std::to_string(bytes) + " bytes where " +
                 std::to_string(expected) + " were due";
        seen = true;
        outcome = {};
        const bool whole =
            readFloatChunks(in, block.size(), [&](const float* chunk, int64_t offset, int64_t n) {
              core::copyMeasuringDistance(params + block.begin + offset, chunk, n, outcome);
            });
        return whole ? "" : "the values were cut short";
      });
  if (why.empty() && !seen) why = "a reply without values";
  version = head.version();
  return why;
}

// A PsPullResponse of encoded values (a compressing variant's pull): decoded, then copied into
// `params` measuring how far they moved. Returns "" or what is wrong with the reply.
std::string takeEncodedValues(const grpc::ByteBuffer& reply, core::PsEncoding encoding,
                              const core::PsBlock& block, float* params, core::PullOutcome& outcome,
                              int64_t& version, int64_t& bytesReceived) {
  proto::PsPullResponse response;
  if (!fromByteBuffer(reply, response)) return "a reply that is not a PsPullResponse";
  std::vector<float> values(static_cast<std::size_t>(block.size()));
  try {
    core::decodeValues(encoding, response.values(), values.data(), block.size());
  } catch (const std::exception& e) {
    return e.what();
  }
  outcome = {};
  core::copyMeasuringDistance(params + block.begin, values.data(), block.size(), outcome);
  version = response.version();
  bytesReceived = static_cast<int64_t>(response.values().size());
  return "";
}

// The data plane's methods, called through the generic API with gRPC's buffers on one side
// (large_field.h); the service's own stub for the rest.
const std::string& pullMethod() {
  static const std::string name =
      "/" + std::string(proto::ParameterServer::service_full_name()) + "/Pull";
  return name;
}
const std::string& pushMethod() {
  static const std::string name =
      "/" + std::string(proto::ParameterServer::service_full_name()) + "/Push";
  return name;
}

}  // namespace

struct GrpcParameterClient::Shard {
  explicit Shard(const std::shared_ptr<grpc::Channel>& channel)
      : stub(proto::ParameterServer::NewStub(channel)), pulls(channel), pushes(channel) {}
  std::unique_ptr<proto::ParameterServer::Stub> stub;
  grpc::TemplatedGenericStub<proto::PsPullRequest, grpc::ByteBuffer> pulls;
  grpc::TemplatedGenericStub<grpc::ByteBuffer, proto::PsPushResponse> pushes;
  std::vector<int> blocks;  // its blocks of the layout
  std::unique_ptr<ParameterStream> stream;
  bool broken = false;    // a call on the stream failed: open it again before the next
  bool grpcOnly = false;  // no stream: TLS, a node without one, or its port out of reach
};

GrpcParameterClient::GrpcParameterClient(std::vector<core::PsBlock> layout,
                                         ParameterClientOptions options)
    : layout_(std::move(layout)), options_(std::move(options)) {
  int shards = 0;
  for (const core::PsBlock& b : layout_) shards = std::max(shards, b.shard + 1);
  DTLAB_ENFORCE(static_cast<int>(options_.addresses.size()) >= shards, "the layout has ", shards,
                " shards and the job names ", options_.addresses.size(), " shard addresses");
  for (const std::string& address : options_.addresses)
    shards_.push_back(std::make_unique<Shard>(makeNodeChannel(address)));
  for (std::size_t b = 0; b < layout_.size(); ++b)
    shards_[static_cast<std::size_t>(layout_[b].shard)]->blocks.push_back(static_cast<int>(b));
  if (!layout_.empty()) landing_.resize(static_cast<std::size_t>(layout_.back().end));
}

GrpcParameterClient::~GrpcParameterClient() = default;

void GrpcParameterClient::fail(int shard, const char* what, const grpc::Status& status) const {
  const std::size_t s = static_cast<std::size_t>(shard);
  const std::string node = s < options_.names.size() && !options_.names[s].empty()
                               ? options_.names[s] + " (" + options_.addresses[s] + ")"
                               : options_.addresses[s];
  const std::string message =
      std::string(what) + " parameter-server shard " + std::to_string(shard) + " on node " + node +
      " failed: " + describeStatus(status, options_.addresses[s], clientTls().enabled());
  if (options_.abort != nullptr && options_.abort->aborted())
    throw core::CommError(core::CommFailure::kAborted, message);
  throw core::CommError(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                            ? core::CommFailure::kTimeout
                            : core::CommFailure::kPeerClosed,
                        message);
}

void GrpcParameterClient::failStream(int shard, const char* what, const SocketError& error) const {
  const std::size_t s = static_cast<std::size_t>(shard);
  const std::string node = s < options_.names.size() && !options_.names[s].empty()
                               ? options_.names[s] + " (" + options_.addresses[s] + ")"
                               : options_.addresses[s];
  const std::string message = std::string(what) + " parameter-server shard " +
                              std::to_string(shard) + " on node " + node +
                              " failed on its stream: " + error.what();
  if (options_.abort != nullptr && options_.abort->aborted())
    throw core::CommError(core::CommFailure::kAborted, message);
  throw core::CommError(error.kind() == SocketError::Kind::kTimeout
                            ? core::CommFailure::kTimeout
                            : core::CommFailure::kPeerClosed,
                        message);
}

void GrpcParameterClient::streamFailed(const std::vector<StreamShare>& shares,
                                       const StreamCallError& error, const char* what) {
  const int shard = layout_[static_cast<std::size_t>(shares[error.share()].blocks.front())].shard;
  shards_[static_cast<std::size_t>(shard)]->broken = true;
  failStream(shard, what, error);
}

std::vector<StreamShare> GrpcParameterClient::streamShares() {
  std::vector<StreamShare> shares;
  if (!options_.stream || clientTls().enabled()) return shares;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = *shards_[s];
    if (shard.grpcOnly || shard.blocks.empty()) continue;
    if (!shard.stream || shard.broken) {
      shard.stream.reset();
      shard.broken = false;
      grpc::ClientContext context;
      prepareClientContext(context, options_.token, options_.callTimeout);
      const auto cancelling = cancelOnAbort(options_.abort, &context, 1);
      proto::PsStreamRequest request;
      request.set_protocol_version(kProtocolVersion);
      request.set_job_id(options_.jobId);
      proto::PsStreamResponse response;
      const grpc::Status status = shard.stub->OpenStream(&context, request, &response);
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
          status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        shard.grpcOnly = true;  // TLS, or a node without a stream: gRPC it is
        continue;
      }
      if (!status.ok()) fail(static_cast<int>(s), "opening the stream of", status);
      try {
        shard.stream = std::make_unique<ParameterStream>(
            parseHostPort(options_.addresses[s], "shard address").host, response.port(),
            options_.jobId, response.ticket(), Clock::now() + options_.callTimeout);
      } catch (const SocketError& e) {
        if (options_.abort != nullptr && options_.abort->aborted())
          failStream(static_cast<int>(s), "connecting to", e);
        logAt(LogLevel::kWarn, "parameter-server shard ", s, " (", options_.addresses[s],
              "): its stream at port ", response.port(), " cannot be used (", e.what(),
              "); its pulls and pushes go over gRPC");
        shard.grpcOnly = true;
        continue;
      }
      logAt(LogLevel::kDebug, "parameter-server shard ", s, " (", options_.addresses[s],
            "): pulls and pushes over its stream at port ", response.port());
    }
    shares.push_back({shard.stream.get(), shard.blocks});
  }
  return shares;
}

void GrpcParameterClient::init(const float* params) {
  sendValues(params, 0, 0);
}

void GrpcParameterClient::reset(const float* params, int64_t version, int64_t epoch) {
  DTLAB_ENFORCE(epoch > 0, "a reset needs an epoch > 0");
  sendValues(params, version, epoch);
}

void GrpcParameterClient::sendValues(const float* params, int64_t version, int64_t epoch) {
  const auto until = Clock::now() + options_.connectTimeout;
  for (std::size_t b = 0; b < layout_.size(); ++b) {
    const core::PsBlock& block = layout_[b];
    proto::PsInitRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(options_.jobId);
    request.set_block(static_cast<int>(b));
    request.set_values(reinterpret_cast<const char*>(params + block.begin),
                       static_cast<std::size_t>(block.size()) * sizeof(float));
    request.set_epoch(epoch);
    request.set_version(version);
    for (;;) {
      grpc::ClientContext context;
      prepareClientContext(context, options_.token, options_.callTimeout);
      context.set_wait_for_ready(true);  // the shard's daemon may still be starting its job
      const auto cancelling = cancelOnAbort(options_.abort, &context, 1);
      proto::PsInitResponse response;
      const grpc::Status status =
          shards_[static_cast<std::size_t>(block.shard)]->stub->Init(&context, request, &response);
      if (status.ok()) break;
      // NOT_FOUND: the shard's daemon has not accepted this job yet; ask again.
      const bool early = status.error_code() == grpc::StatusCode::NOT_FOUND && epoch == 0;
      if (!early || Clock::now() >= until || (options_.abort && options_.abort->aborted()))
        fail(block.shard, epoch == 0 ? "initialising" : "resetting", status);
      std::this_thread::sleep_for(kInitRetry);
    }
    bytesSent_ += static_cast<int64_t>(request.values().size());
  }
}

double GrpcParameterClient::waitForClock(int64_t clock) {
  const auto start = Clock::now();
  for (;;) {
    grpc::ClientContext context;
    prepareClientContext(context, options_.token, kWaitSlice);
    const auto cancelling = cancelOnAbort(options_.abort, &context, 1);
    proto::PsWaitRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(options_.jobId);
    request.set_clock(clock);
    proto::PsWaitResponse response;
    const grpc::Status status = shards_[0]->stub->WaitClock(&context, request, &response);
    if (status.ok()) break;
    if (options_.abort != nullptr && options_.abort->aborted())
      throw core::CommError(core::CommFailure::kAborted,
                            "waiting for the slowest worker aborted: " + options_.abort->reason());
    if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED)
      fail(0, "waiting for the slowest worker at", status);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

core::PullOutcome GrpcParameterClient::pull(float* params, std::vector<int64_t>& versions) {
  const std::size_t n = layout_.size();
  Calls<proto::PsPullRequest, grpc::ByteBuffer> calls(n);
  // Each reply is taken apart by the callback that receives it, its values copied straight
  // from gRPC's buffers into the model while the other blocks still arrive.
  std::vector<core::PullOutcome> outcomes(n);
  std::vector<std::string> broken(n);
  versions.resize(n);
  // Encoded values go over gRPC (the streams carry float32 blocks).
  const core::PsEncoding encoding = pullEncoding_;
  const bool encoded = encoding != core::PsEncoding::kFloat32;
  std::vector<int64_t> encodedBytes(n, 0);
  const std::vector<StreamShare> shares = encoded ? std::vector<StreamShare>() : streamShares();
  const std::vector<char> viaStream = overStreams(shares, n);
  const auto cancelling = cancelOnAbort(options_.abort, calls.contexts.data(), n);
  const auto shuttingDown = shutDownOnAbort(options_.abort, shares);
  const auto deadline = Clock::now() + options_.callTimeout;
  try {
    issueEachBlock(
        calls, options_,
        [&](std::size_t b, auto done) {
          if (viaStream[b]) return done(grpc::Status::OK);
          const core::PsBlock& block = layout_[b];
          calls.requests[b].set_encoding(static_cast<int32_t>(encoding));
          shards_[static_cast<std::size_t>(block.shard)]->pulls.UnaryCall(
              &calls.contexts[b], pullMethod(), {}, &calls.requests[b], &calls.responses[b],
              [&, b, block, done = std::move(done)](grpc::Status status) {
                if (status.ok())
                  broken[b] =
                      encoded
                          ? takeEncodedValues(calls.responses[b], encoding, block, params,
                                              outcomes[b], versions[b], encodedBytes[b])
                          : takeValues(calls.responses[b], block, params, outcomes[b], versions[b]);
                done(std::move(status));
              });
        },
        [&] {
          pullOverStreams(shares, layout_, landing_.data(), deadline, [&](int b, int64_t version) {
            const core::PsBlock& block = layout_[static_cast<std::size_t>(b)];
            core::copyMeasuringDistance(params + block.begin, landing_.data() + block.begin,
                                        block.size(), outcomes[static_cast<std::size_t>(b)]);
            versions[static_cast<std::size_t>(b)] = version;
          });
        });
  } catch (const StreamCallError& e) {
    streamFailed(shares, e, "pulling from");
  }
  core::PullOutcome outcome;
  for (std::size_t b = 0; b < n; ++b) {
    const core::PsBlock& block = layout_[b];
    if (!calls.statuses[b].ok()) fail(block.shard, "pulling from", calls.statuses[b]);
    if (!broken[b].empty())
      fail(block.shard, "pulling from", {grpc::StatusCode::DATA_LOSS, broken[b]});
    outcome.distanceSquared += outcomes[b].distanceSquared;
    outcome.normSquared += outcomes[b].normSquared;
    bytesReceived_ += encoded ? encodedBytes[b] : block.size() * int64_t{sizeof(float)};
  }
  return outcome;
}

void GrpcParameterClient::stageSnapshot() {
  const std::size_t n = layout_.size();
  Calls<proto::PsSnapshotRequest, proto::PsSnapshotResponse> calls(n);
  const auto cancelling = cancelOnAbort(options_.abort, calls.contexts.data(), n);
  issueEachBlock(calls, options_, [&](std::size_t b, auto done) {
    calls.requests[b].set_mode(proto::PsSnapshotRequest::STAGE);
    shards_[static_cast<std::size_t>(layout_[b].shard)]->stub->async()->Snapshot(
        &calls.contexts[b], &calls.requests[b], &calls.responses[b], std::move(done));
  });
  for (std::size_t b = 0; b < n; ++b)
    if (!calls.statuses[b].ok())
      fail(layout_[b].shard, "setting a snapshot aside on", calls.statuses[b]);
}

core::ServerSnapshot GrpcParameterClient::fetchStagedSnapshot() {
  // Reads only what never changes after construction (layout, options, stubs), so it may run
  // beside the worker's pulls and pushes.
  const std::size_t n = layout_.size();
  Calls<proto::PsSnapshotRequest, proto::PsSnapshotResponse> calls(n);
  const auto cancelling = cancelOnAbort(options_.abort, calls.contexts.data(), n);
  issueEachBlock(calls, options_, [&](std::size_t b, auto done) {
    calls.requests[b].set_mode(proto::PsSnapshotRequest::FETCH_STAGED);
    shards_[static_cast<std::size_t>(layout_[b].shard)]->stub->async()->Snapshot(
        &calls.contexts[b], &calls.requests[b], &calls.responses[b], std::move(done));
  });
  core::ServerSnapshot out;
  const auto bytes = [](const core::PsBlock& block) {
    return static_cast<std::size_t>(block.size()) * sizeof(float);
  };
  auto floats = [&](const std::string& data, const core::PsBlock& block) {
    if (data.size() != bytes(block))
      fail(block.shard, "fetching a snapshot from",
           {grpc::StatusCode::DATA_LOSS, "a block of " + std::to_string(data.size()) + " bytes"});
    std::vector<float> v(static_cast<std::size_t>(block.size()));
    std::memcpy(v.data(), data.data(), data.size());
    return v;
  };
  for (std::size_t b = 0; b < n; ++b) {
    const core::PsBlock& block = layout_[b];
    if (!calls.statuses[b].ok()) fail(block.shard, "fetching a snapshot from", calls.statuses[b]);
    proto::PsSnapshotResponse& r = calls.responses[b];
    core::ParameterBlock::Snapshot s;
    s.version = r.version();
    s.params = floats(r.values(), block);
    r.clear_values();  // a block's copy at a time, not the whole server twice
    for (const std::string& part : r.optimizer_state())
      s.optimizerState.push_back(floats(part, block));
    r.clear_optimizer_state();
    out.blocks.push_back(std::move(s));
  }
  out.clocks.assign(calls.responses[0].clocks().begin(), calls.responses[0].clocks().end());
  if (out.clocks.empty())
    fail(0, "fetching a snapshot from",
         {grpc::StatusCode::DATA_LOSS, "block 0 came without the board's clocks"});
  return out;
}

core::PushOutcome GrpcParameterClient::push(const float* grads, const std::vector<int64_t>& basedOn,
                                            const core::WorkerReport& report) {
  const std::size_t n = layout_.size();
  Calls<grpc::ByteBuffer, proto::PsPushResponse> calls(n);
  const auto cancelling = cancelOnAbort(options_.abort, calls.contexts.data(), n);
  // Encoded gradients go over gRPC (the streams carry float32 blocks).
  const core::PsEncoding encoding = pushEncoding_;
  const bool encoded = encoding != core::PsEncoding::kFloat32;
  const std::vector<StreamShare> shares = encoded ? std::vector<StreamShare>() : streamShares();
  const std::vector<char> viaStream = overStreams(shares, n);
  std::vector<int64_t> sentBytes(n, 0);
  std::string bytes;
  for (std::size_t b = 0; b < n; ++b) {
    const core::PsBlock& block = layout_[b];
    sentBytes[b] = block.size() * static_cast<int64_t>(sizeof(float));
    if (viaStream[b]) continue;  // sent straight from `grads`
    proto::PsPushRequest head;
    head.set_protocol_version(kProtocolVersion);
    head.set_job_id(options_.jobId);
    head.set_block(static_cast<int>(b));
    head.set_based_on(basedOn.at(b));
    head.set_encoding(static_cast<int32_t>(encoding));
    // One copy, into a buffer the message owns: the transport may still hold it after a call
    // fails, when the model's gradient buffer could be gone.
    if (encoded) {
      bytes.clear();
      core::encodeValues(encoding, grads + block.begin, block.size(), bytes);
      sentBytes[b] = static_cast<int64_t>(bytes.size());
    }
    LargeField gradient(static_cast<std::size_t>(sentBytes[b]));
    std::memcpy(gradient.data(),
                encoded ? bytes.data() : reinterpret_cast<const char*>(grads + block.begin),
                gradient.size());
    calls.requests[b] =
        serializeWithLargeField(head, proto::PsPushRequest::kGradientFieldNumber, gradient);
  }
  std::vector<int64_t> appliedTo(n, 0);
  const auto shuttingDown = shutDownOnAbort(options_.abort, shares);
  const auto deadline = Clock::now() + options_.callTimeout;
  try {
    issueEachBlock(
        calls, options_,
        [&](std::size_t b, auto done) {
          if (viaStream[b]) return done(grpc::Status::OK);
          shards_[static_cast<std::size_t>(layout_[b].shard)]->pushes.UnaryCall(
              &calls.contexts[b], pushMethod(), {}, &calls.requests[b], &calls.responses[b],
              [&, b, done = std::move(done)](grpc::Status status) {
                appliedTo[b] = calls.responses[b].applied_to();
                done(std::move(status));
              });
        },
        [&] {
          pushOverStreams(shares, layout_, grads, basedOn, deadline, [&](int b, int64_t version) {
            appliedTo[static_cast<std::size_t>(b)] = version;
          });
        });
  } catch (const StreamCallError& e) {
    streamFailed(shares, e, "pushing to");
  }
  core::PushOutcome outcome;
  for (std::size_t b = 0; b < n; ++b) {
    if (!calls.statuses[b].ok()) fail(layout_[b].shard, "pushing to", calls.statuses[b]);
    outcome.staleness = std::max(outcome.staleness, appliedTo[b] - basedOn.at(b));
    bytesSent_ += sentBytes[b];
  }
  outcome.appliedTo = std::move(appliedTo);
  // The clock moves only once every block has the gradient: ssp's bound counts whole updates.
  outcome.board = this->report(report);
  return outcome;
}

core::BoardState GrpcParameterClient::report(const core::WorkerReport& r) {
  grpc::ClientContext context;
  prepareClientContext(context, options_.token, options_.callTimeout);
  const auto cancelling = cancelOnAbort(options_.abort, &context, 1);
  proto::PsReportRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_job_id(options_.jobId);
  request.set_worker(r.worker);
  request.set_clock(r.clock);
  for (float v : r.votes.values) request.add_votes(v);
  request.set_compute_ms(r.computeMs);
  request.set_phase(r.phase);
  proto::PsBoard response;
  const grpc::Status status = shards_[0]->stub->Report(&context, request, &response);
  if (!status.ok()) fail(0, "reporting to", status);
  return fromProto(response);
}

core::BoardState GrpcParameterClient::agree(const core::WorkerReport& r) {
  return report(r);
}

void GrpcParameterClient::leave(int worker) {
  // Every shard hears it (each keeps its own count of who is done); a shard that is gone
  // needs no telling, so errors are not thrown here. An aborted job tells nobody: the run is
  // ending, or the coordinator tells the shards itself, and a stopped shard would hold each
  // call for its whole deadline.
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    grpc::ClientContext context;
    prepareClientContext(context, options_.token, std::chrono::milliseconds(3000));
    const auto cancelling = cancelOnAbort(options_.abort, &context, 1);
    proto::PsLeaveRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_job_id(options_.jobId);
    request.set_worker(worker);
    proto::PsLeaveResponse response;
    shards_[s]->stub->Leave(&context, request, &response);
  }
}

}  // namespace dtlab::remote
