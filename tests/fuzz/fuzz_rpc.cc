// Every RPC handler of a real dtlab-node (NodeService, Rendezvous, ParameterServer), served by
// a NodeServer in this process on loopback and called over a real channel with hostile bytes.
// Input: byte 0 picks the method, byte 1 the credentials (bit 0: the node's token, else bit 1:
// a wrong one, else none), the rest is the request message as sent on the wire, which need
// not parse. Promised for every input: bytes that do not parse are refused; a request that
// parses gets UNAUTHENTICATED without the token, and with it never UNKNOWN, INTERNAL or
// UNIMPLEMENTED (an escaped exception or a broken handler), every error with a message; the
// node never crashes, leaks memory or trips a sanitizer.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/protocol.h"
#include "remote/node/node_server.h"
#include "remote/proto/dtlab.pb.h"
#include "tests/fuzz/fuzz_support.h"

namespace proto = dtlab::remote::proto;
using dtlab::fuzz::finding;

namespace {

constexpr const char* kToken = "fuzz-token";

struct Method {
  const char* path;
  std::unique_ptr<google::protobuf::Message> (*request)();
};

template <typename T>
std::unique_ptr<google::protobuf::Message> make() {
  return std::make_unique<T>();
}

const std::vector<Method>& methods() {
  static const std::vector<Method> all = {
      {"/dtlab.remote.proto.NodeService/GetInfo", &make<proto::GetInfoRequest>},
      {"/dtlab.remote.proto.NodeService/StartJob", &make<proto::StartJobRequest>},
      {"/dtlab.remote.proto.NodeService/WatchJob", &make<proto::WatchJobRequest>},
      {"/dtlab.remote.proto.NodeService/CancelJob", &make<proto::CancelJobRequest>},
      {"/dtlab.remote.proto.NodeService/Ping", &make<proto::PingRequest>},
      {"/dtlab.remote.proto.Rendezvous/Set", &make<proto::SetRequest>},
      {"/dtlab.remote.proto.Rendezvous/Get", &make<proto::GetRequest>},
      {"/dtlab.remote.proto.Rendezvous/Wait", &make<proto::WaitRequest>},
      {"/dtlab.remote.proto.ParameterServer/Init", &make<proto::PsInitRequest>},
      {"/dtlab.remote.proto.ParameterServer/Pull", &make<proto::PsPullRequest>},
      {"/dtlab.remote.proto.ParameterServer/Push", &make<proto::PsPushRequest>},
      {"/dtlab.remote.proto.ParameterServer/Report", &make<proto::PsReportRequest>},
      {"/dtlab.remote.proto.ParameterServer/WaitClock", &make<proto::PsWaitRequest>},
      {"/dtlab.remote.proto.ParameterServer/Leave", &make<proto::PsLeaveRequest>},
      {"/dtlab.remote.proto.NodeService/RegroupJob", &make<proto::RegroupJobRequest>},
      {"/dtlab.remote.proto.ParameterServer/Snapshot", &make<proto::PsSnapshotRequest>},
      {"/dtlab.remote.proto.ParameterServer/OpenStream", &make<proto::PsStreamRequest>},
      // A client stream of one part (the generic unary call sends one message, then closes).
      {"/dtlab.remote.proto.NodeService/StageCheckpoint", &make<proto::CheckpointPart>},
      {"/dtlab.remote.proto.NodeService/Reserve", &make<proto::ReserveRequest>},
  };
  return all;
}

// The node and a channel to it, made once per process and never torn down: a destructor run
// at exit (the replay's return from main) would close the channel while the server's threads
// still run, which crashed the replay once under load.
struct Harness {
  dtlab::remote::NodeServer* node;
  std::unique_ptr<grpc::GenericStub> stub;
};

Harness& harness() {
  static Harness* h = [] {
    dtlab::remote::NodeOptions options;
    options.token = kToken;
    options.connectTimeout = std::chrono::milliseconds(2000);
    auto* node = new dtlab::remote::NodeServer(options);
    return new Harness{
        node, std::make_unique<grpc::GenericStub>(dtlab::remote::makeNodeChannel(node->address()))};
  }();
  return *h;
}

grpc::Status call(const std::string& method, const std::string& body, const std::string& token) {
  grpc::ClientContext context;
  dtlab::remote::prepareClientContext(context, token, std::chrono::milliseconds(150));
  const grpc::Slice slice(body.data(), body.size());
  const grpc::ByteBuffer request(&slice, 1);
  grpc::CompletionQueue queue;
  auto reader = harness().stub->PrepareUnaryCall(&context, method, request, &queue);
  reader->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  reader->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

std::string seed(std::size_t method, uint8_t credentials,
                 const google::protobuf::Message& request) {
  std::string out;
  out += static_cast<char>(method);
  out += static_cast<char>(credentials);
  return out + request.SerializeAsString();
}

// One request of each method as a coordinator or a worker sends it (a one-node job of a small
// spec among them), with the token, and a few without it.
void writeSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const uint32_t version = dtlab::remote::kProtocolVersion;
  std::vector<std::string> seeds;
  proto::GetInfoRequest info;
  info.set_protocol_version(version);
  seeds.push_back(seed(0, 1, info));
  seeds.push_back(seed(0, 0, info));
  seeds.push_back(seed(0, 2, info));
  proto::StartJobRequest start;
  start.set_protocol_version(version);
  start.set_job_id("fuzz-seed");
  start.set_spec_json(R"({"name": "fuzz", "dataset": {"train_size": 256, "test_size": 64},
      "model": {"hidden": [8]}, "training": {"max_steps": 20, "batch_size": 32},
      "variants": [{"name": "sync", "strategy": "sync_allreduce"}]})");
  start.set_world_size(1);
  start.set_node_name("fuzz");
  seeds.push_back(seed(1, 1, start));
  start.set_world_size(2);
  start.set_rendezvous_address("127.0.0.1:1");
  start.add_ps_addresses("127.0.0.1:1");
  seeds.push_back(seed(1, 1, start));
  proto::WatchJobRequest watch;
  watch.set_protocol_version(version);
  watch.set_job_id("fuzz-seed");
  seeds.push_back(seed(2, 1, watch));
  proto::CancelJobRequest cancel;
  cancel.set_protocol_version(version);
  cancel.set_job_id("fuzz-seed");
  seeds.push_back(seed(3, 1, cancel));
  proto::PingRequest ping;
  ping.set_protocol_version(version);
  seeds.push_back(seed(4, 1, ping));
  proto::SetRequest set;
  set.set_protocol_version(version);
  set.set_key("fuzz-seed/rank0");
  set.set_value("127.0.0.1:5000");
  seeds.push_back(seed(5, 1, set));
  proto::GetRequest get;
  get.set_protocol_version(version);
  get.set_key("fuzz-seed/rank0");
  get.set_timeout_ms(50);
  seeds.push_back(seed(6, 1, get));
  proto::WaitRequest wait;
  wait.set_protocol_version(version);
  wait.add_keys("fuzz-seed/rank0");
  wait.add_keys("fuzz-seed/rank1");
  wait.set_timeout_ms(50);
  seeds.push_back(seed(7, 1, wait));
  proto::PsInitRequest init;
  init.set_protocol_version(version);
  init.set_job_id("fuzz-seed");
  init.set_values(std::string(64, '\0'));
  seeds.push_back(seed(8, 1, init));
  proto::PsPullRequest pull;
  pull.set_protocol_version(version);
  pull.set_job_id("fuzz-seed");
  seeds.push_back(seed(9, 1, pull));
  proto::PsPushRequest push;
  push.set_protocol_version(version);
  push.set_job_id("fuzz-seed");
  push.set_gradient(std::string(64, '\0'));
  seeds.push_back(seed(10, 1, push));
  proto::PsReportRequest report;
  report.set_protocol_version(version);
  report.set_job_id("fuzz-seed");
  report.add_votes(1.0f);
  report.set_phase(-1);
  seeds.push_back(seed(11, 1, report));
  proto::PsWaitRequest clock;
  clock.set_protocol_version(version);
  clock.set_job_id("fuzz-seed");
  clock.set_clock(1);
  seeds.push_back(seed(12, 1, clock));
  proto::PsLeaveRequest leave;
  leave.set_protocol_version(version);
  leave.set_job_id("fuzz-seed");
  seeds.push_back(seed(13, 1, leave));
  proto::RegroupJobRequest regroup;
  regroup.set_protocol_version(version);
  regroup.set_job_id("fuzz-seed");
  regroup.set_generation(1);
  regroup.add_members(0);
  regroup.set_rendezvous_address("127.0.0.1:1");
  seeds.push_back(seed(14, 1, regroup));
  proto::PsSnapshotRequest snapshot;
  snapshot.set_protocol_version(version);
  snapshot.set_job_id("fuzz-seed");
  seeds.push_back(seed(15, 1, snapshot));
  proto::PsStreamRequest stream;
  stream.set_protocol_version(version);
  stream.set_job_id("fuzz-seed");
  seeds.push_back(seed(16, 1, stream));
  seeds.push_back(seed(16, 0, stream));
  proto::CheckpointPart part;  // a whole (tiny, not decodable) checkpoint in one part
  part.set_protocol_version(version);
  part.set_job_id("fuzz-seed");
  part.set_total_bytes(8);
  part.set_data("DTLCKPT1");
  seeds.push_back(seed(17, 1, part));
  proto::ReserveRequest reserve;
  reserve.set_protocol_version(version);
  reserve.set_reservation_id("fuzz-seed");
  reserve.set_ticket(1);
  reserve.set_owner("fuzz@lab");
  reserve.set_run_name("fuzz/sync");
  reserve.set_lease_ms(2000);
  seeds.push_back(seed(18, 1, reserve));
  reserve.set_action(proto::ReserveRequest::COMMIT);
  seeds.push_back(seed(18, 1, reserve));
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "seed-%02zu.bin", i);
    std::ofstream(dir / name, std::ios::binary) << seeds[i];
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  return dtlab::fuzz::writeSeedsIfAsked(writeSeeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Method& method = methods()[data[0] % methods().size()];
  const std::string body(input.substr(2));
  const std::string token = (data[1] & 1) ? kToken : (data[1] & 2) ? "not-the-token" : "";
  const grpc::Status status = call(method.path, body, token);
  const std::string where = std::string(method.path) + ": ";
  // Bytes that are not the method's request never reach a handler: gRPC refuses them
  // (UNIMPLEMENTED, before any handler could check the token).
  if (!method.request()->ParseFromString(body)) {
    if (status.ok()) finding(where + "a request that does not parse was answered", input);
    return 0;
  }
  if (token != kToken) {
    if (status.error_code() != grpc::StatusCode::UNAUTHENTICATED)
      finding(where + "answered a call without the token: " + std::to_string(status.error_code()) +
                  " " + status.error_message(),
              input);
    return 0;
  }
  if (status.ok()) return 0;
  if (status.error_message().empty())
    finding(where + "an error without a message: " + std::to_string(status.error_code()), input);
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::UNKNOWN || code == grpc::StatusCode::INTERNAL ||
      code == grpc::StatusCode::UNIMPLEMENTED)
    finding(where + "a well-formed request broke the handler: " + std::to_string(code) + " " +
                status.error_message(),
            input);
  return 0;
}
