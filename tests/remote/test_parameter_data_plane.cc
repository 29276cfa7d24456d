// The parameter server's data plane: Pull and Push on gRPC's own buffers (large_field.h),
// served by a real ParameterService on loopback in this process. The messages must stay the
// proto's: bytes split anywhere parse the same, the generated classes read what is written
// and write what is read, and bytes that are not such a message are refused with a reason.
// GrpcParameterClient's pulls and pushes over these calls (and over the stream beside them)
// are checked against the server's own numbers in test_parameter_stream.cc.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "core/train/parameter_server.h"
#include "core/train/ps_encoding.h"
#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/large_field.h"
#include "remote/common/protocol.h"
#include "remote/node/parameter_client.h"
#include "remote/node/parameter_service.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtTest/QtTest>
#undef slots

namespace core = dtlab::core;
namespace proto = dtlab::remote::proto;
using dtlab::remote::LargeField;
using google::protobuf::io::CodedInputStream;

namespace {

constexpr const char* kJob = "data-plane";
constexpr const char* kToken = "data-plane-token";
// Three blocks (core::kMaxBlockFloats each at most), each several read chunks long.
constexpr int64_t kParams = 1'100'000;

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = scale * static_cast<float>(i % 997) - 1.0f;
  return v;
}

// The bytes of `buffer` in one string.
std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  grpc::ByteBuffer(buffer).Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// `bytes` as a buffer of `piece`-byte slices: floats straddle slices, none is aligned.
grpc::ByteBuffer inPieces(const std::string& bytes, std::size_t piece) {
  std::vector<grpc::Slice> slices;
  for (std::size_t at = 0; at < bytes.size(); at += piece)
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string floatBytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}

// Reads a PsPushRequest's gradient through readFloatChunks; counts how often the field came.
struct GradientReader {
  std::vector<float> values;
  int seen = 0;
  dtlab::remote::LargeFieldReader reader() {
    return [this](CodedInputStream& in, int bytes) -> std::string {
      ++seen;
      values.assign(static_cast<std::size_t>(bytes) / sizeof(float), 0.0f);
      const bool whole = dtlab::remote::readFloatChunks(
          in, static_cast<int64_t>(values.size()), [&](const float* chunk, int64_t at, int64_t n) {
            std::memcpy(values.data() + at, chunk, static_cast<std::size_t>(n) * sizeof(float));
          });
      return whole ? "" : "cut short";
    };
  }
};

std::string parsePush(const grpc::ByteBuffer& buffer, proto::PsPushRequest& rest,
                      GradientReader& gradient) {
  return dtlab::remote::parseWithLargeField(buffer, proto::PsPushRequest::kGradientFieldNumber,
                                            rest, gradient.reader());
}

// A ParameterService for one job, its blocks seeded by nobody yet, on 127.0.0.1.
struct Server {
  dtlab::remote::ParameterTable table;
  dtlab::remote::ParameterService service{table, kToken};
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  explicit Server(const core::ExperimentSpec& spec) {
    table.install(kJob, std::make_shared<core::ParameterHost>(spec, core::psLayout(kParams, 1), 0,
                                                              2, 32, 100));
    grpc::ServerBuilder builder;
    builder.SetMaxReceiveMessageSize(dtlab::remote::kMaxRequestBytes);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

core::ExperimentSpec sgdSpec() {
  core::ExperimentSpec spec;
  spec.optimizer.kind = core::OptimizerKind::kSgd;
  spec.optimizer.momentum = 0.9f;
  return spec;
}

void prepare(grpc::ClientContext& context, const std::string& token = kToken) {
  dtlab::remote::prepareClientContext(context, token, std::chrono::milliseconds(10000));
}

}  // namespace

class TestParameterDataPlane : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aLargeFieldIsTheProtosEncoding() {
    proto::PsPushRequest head;
    head.set_protocol_version(7);
    head.set_job_id("job");
    head.set_block(2);
    head.set_based_on(41);
    const std::vector<float> gradient = ramp(40'000, 0.25f);  // several read chunks
    LargeField payload(gradient.size() * sizeof(float));
    std::memcpy(payload.data(), gradient.data(), payload.size());
    const grpc::ByteBuffer written = dtlab::remote::serializeWithLargeField(
        head, proto::PsPushRequest::kGradientFieldNumber, payload);

    // The generated class reads it.
    proto::PsPushRequest generated;
    QVERIFY(generated.ParseFromString(flatten(written)));
    QCOMPARE(generated.job_id(), std::string("job"));
    QCOMPARE(generated.block(), 2);
    QCOMPARE(generated.based_on(), int64_t{41});
    QVERIFY(generated.gradient() == floatBytes(gradient));

    // And it reads back from pieces of any size, floats split between them.
    for (std::size_t piece :
         {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
      proto::PsPushRequest rest;
      GradientReader read;
      QCOMPARE(parsePush(inPieces(flatten(written), piece), rest, read), std::string());
      QCOMPARE(read.seen, 1);
      QVERIFY(read.values == gradient);
      QCOMPARE(rest.job_id(), std::string("job"));
      QCOMPARE(rest.based_on(), int64_t{41});
      QVERIFY(rest.gradient().empty());
    }

    // An empty large field is still a field, read as nothing.
    proto::PsPullResponse version;
    version.set_version(3);
    const std::string empty = flatten(dtlab::remote::serializeWithLargeField(
        version, proto::PsPullResponse::kValuesFieldNumber, LargeField(0)));
    proto::PsPullResponse back;
    QVERIFY(back.ParseFromString(empty));
    QCOMPARE(back.version(), int64_t{3});
    QVERIFY(back.values().empty());
  }

  void anyOrderAndUnknownFieldsParseAsProtobufDoes() {
    // The gradient first, the small fields after, an unknown field and the gradient again:
    // all valid protobuf, the last gradient counts.
    proto::PsPushRequest first;
    first.set_gradient(floatBytes(ramp(100, 1.0f)));
    proto::PsPushRequest head;
    head.set_job_id("job");
    head.set_based_on(5);
    proto::PsPushRequest last;
    last.set_gradient(floatBytes(ramp(10, 2.0f)));
    const std::string unknown = "\xa8\x06\x2a";  // field 101, varint 42
    const std::string bytes =
        first.SerializeAsString() + head.SerializeAsString() + unknown + last.SerializeAsString();
    proto::PsPushRequest generated;
    QVERIFY(generated.ParseFromString(bytes));

    proto::PsPushRequest rest;
    GradientReader read;
    QCOMPARE(parsePush(inPieces(bytes, 3), rest, read), std::string());
    QCOMPARE(read.seen, 2);
    QVERIFY(floatBytes(read.values) == generated.gradient());
    QCOMPARE(rest.job_id(), std::string("job"));
    QCOMPARE(rest.based_on(), int64_t{5});

    // Field 5 as a varint is not the large field: protobuf keeps it as an unknown field.
    const std::string wrongType = head.SerializeAsString() + "\x28\x01";
    QVERIFY(generated.ParseFromString(wrongType));
    GradientReader none;
    QCOMPARE(parsePush(inPieces(wrongType, 5), rest, none), std::string());
    QCOMPARE(none.seen, 0);
  }

  void bytesThatAreNotTheMessageAreRefused() {
    proto::PsPushRequest whole;
    whole.set_job_id("job");
    whole.set_gradient(floatBytes(ramp(1000, 1.0f)));
    const std::string bytes = whole.SerializeAsString();
    proto::PsPushRequest rest;
    GradientReader read;
    // Cut inside the gradient: its length runs past the end.
    const std::string cut = parsePush(inPieces(bytes.substr(0, bytes.size() - 10), 64), rest, read);
    QVERIFY2(cut.find("field 5 at byte") != std::string::npos, cut.c_str());
    QVERIFY2(cut.find("runs past the end") != std::string::npos, cut.c_str());
    QCOMPARE(read.seen, 0);
    // A tag of 0.
    const std::string zero = parsePush(inPieces(std::string("\x00\x01", 2), 1), rest, read);
    QVERIFY2(zero.find("no valid field at byte 0") != std::string::npos, zero.c_str());
    // A small field cut short.
    const std::string small = parsePush(inPieces(std::string("\x12\x09job", 5), 2), rest, read);
    QVERIFY2(small.find("malformed") != std::string::npos, small.c_str());
    // The reader's own verdict comes back as it said it.
    const std::string refused = dtlab::remote::parseWithLargeField(
        inPieces(bytes, 100), proto::PsPushRequest::kGradientFieldNumber, rest,
        [](CodedInputStream&, int bytes) { return "not " + std::to_string(bytes) + " bytes"; });
    QCOMPARE(refused, std::string("not 4000 bytes"));
    // A reader that takes less than the field is caught.
    const std::string partial = dtlab::remote::parseWithLargeField(
        inPieces(bytes, 100), proto::PsPushRequest::kGradientFieldNumber, rest,
        [](CodedInputStream& in, int) { return in.Skip(8) ? "" : "?"; });
    QCOMPARE(partial, std::string("field 5 was not read whole"));
  }

  void theGeneratedClassesTalkToTheSameService() {
    Server server(sgdSpec());
    QVERIFY(server.server && server.port != 0);
    auto stub = proto::ParameterServer::NewStub(dtlab::remote::makeNodeChannel(server.address()));
    const std::vector<core::PsBlock> layout = core::psLayout(kParams, 1);
    const std::vector<float> initial = ramp(kParams, 0.002f);
    for (std::size_t b = 0; b < layout.size(); ++b) {
      grpc::ClientContext context;
      prepare(context);
      proto::PsInitRequest init;
      init.set_protocol_version(dtlab::remote::kProtocolVersion);
      init.set_job_id(kJob);
      init.set_block(static_cast<int>(b));
      init.set_values(
          floatBytes({initial.begin() + layout[b].begin, initial.begin() + layout[b].end}));
      proto::PsInitResponse ignored;
      QVERIFY(stub->Init(&context, init, &ignored).ok());
    }
    auto pull = [&](int block, proto::PsPullResponse& out, const std::string& token = kToken) {
      grpc::ClientContext context;
      prepare(context, token);
      proto::PsPullRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_job_id(kJob);
      request.set_block(block);
      return stub->Pull(&context, request, &out);
    };
    auto push = [&](int block, const std::string& gradient, const std::string& token = kToken,
                    core::PsEncoding encoding = core::PsEncoding::kFloat32) {
      grpc::ClientContext context;
      prepare(context, token);
      proto::PsPushRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_job_id(kJob);
      request.set_block(block);
      request.set_gradient(gradient);
      request.set_encoding(static_cast<int32_t>(encoding));
      proto::PsPushResponse response;
      return stub->Push(&context, request, &response);
    };

    proto::PsPullResponse block1;
    QVERIFY(pull(1, block1).ok());
    QCOMPARE(block1.version(), int64_t{0});
    QVERIFY(block1.values() ==
            floatBytes({initial.begin() + layout[1].begin, initial.begin() + layout[1].end}));
    const std::size_t blockBytes = static_cast<std::size_t>(layout[1].size()) * sizeof(float);
    QVERIFY(push(1, std::string(blockBytes, '\0')).ok());
    QVERIFY(pull(1, block1).ok());
    QCOMPARE(block1.version(), int64_t{1});

    // What is wrong is named: the gradient's size, the block, the token.
    grpc::Status status = push(1, std::string(blockBytes - 4, '\0'));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("gradient: block [") != std::string::npos &&
                 status.error_message().find("got " + std::to_string(blockBytes - 4)) !=
                     std::string::npos,
             status.error_message().c_str());
    status = pull(7, block1);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("block: 7") != std::string::npos,
             status.error_message().c_str());
    QCOMPARE(pull(0, block1, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    QCOMPARE(push(0, std::string(blockBytes, '\0'), "").error_code(),
             grpc::StatusCode::UNAUTHENTICATED);

    // Compressed pushes and pulls (a variant's "compression", ps_encoding.h): a sparse gradient
    // is applied as the dense one it stands for; a 16-bit pull comes back within rounding; a
    // payload that does not decode is refused saying why, and the block is left as it was.
    std::vector<float> sparse(static_cast<std::size_t>(layout[0].size()), 0.0f);
    sparse[5] = 1.0f;
    std::string encoded;
    core::encodeValues(core::PsEncoding::kSparse, sparse.data(), layout[0].size(), encoded);
    proto::PsPullResponse before;
    QVERIFY(pull(0, before).ok());
    QVERIFY(push(0, encoded, kToken, core::PsEncoding::kSparse).ok());
    proto::PsPullResponse after;
    QVERIFY(pull(0, after).ok());
    QCOMPARE(after.version(), before.version() + 1);
    std::vector<float> was(sparse.size()), now(sparse.size());
    std::memcpy(was.data(), before.values().data(), was.size() * sizeof(float));
    std::memcpy(now.data(), after.values().data(), now.size() * sizeof(float));
    for (std::size_t i = 0; i < was.size(); ++i)
      QVERIFY2(i == 5 ? now[i] != was[i] : now[i] == was[i], qPrintable(QString::number(i)));
    status = push(0, encoded.substr(0, encoded.size() - 2), kToken, core::PsEncoding::kSparse);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(
        status.error_message().find("gradient: sparse values of a block of") != std::string::npos,
        status.error_message().c_str());
    status = push(0, encoded, kToken, static_cast<core::PsEncoding>(9));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("encoding 9 is not one of") != std::string::npos,
             status.error_message().c_str());
    QVERIFY(pull(0, before).ok());
    QCOMPARE(before.version(), after.version());  // nothing applied
    {
      grpc::ClientContext context;
      prepare(context);
      proto::PsPullRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_job_id(kJob);
      request.set_block(0);
      request.set_encoding(static_cast<int32_t>(core::PsEncoding::kBf16));
      proto::PsPullResponse halves;
      QVERIFY(stub->Pull(&context, request, &halves).ok());
      QCOMPARE(halves.values().size(), now.size() * 2);
      std::vector<float> decoded(now.size());
      core::decodeValues(core::PsEncoding::kBf16, halves.values(), decoded.data(),
                         layout[0].size());
      for (std::size_t i = 0; i < now.size(); ++i)
        QVERIFY(std::abs(decoded[i] - now[i]) <= 0x1.0p-8f * std::abs(now[i]));
    }

    // Bytes that are no PsPushRequest at all: refused, saying so.
    grpc::GenericStub generic(dtlab::remote::makeNodeChannel(server.address()));
    grpc::ClientContext context;
    prepare(context);
    const grpc::Slice garbage(std::string("\x2a\xff\xff\xff\xff\x0f", 6));
    const grpc::ByteBuffer request(&garbage, 1);
    grpc::ByteBuffer response;
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    generic.UnaryCall(&context, "/dtlab.remote.proto.ParameterServer/Push", {}, &request, &response,
                      [&](grpc::Status s) {
                        std::lock_guard<std::mutex> lock(mutex);
                        status = std::move(s);
                        finished = true;
                        done.notify_all();
                      });
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished; });
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("the request is not a PsPushRequest: field 5 at byte 0") !=
                 std::string::npos,
             status.error_message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestParameterDataPlane)
#include "test_parameter_data_plane.moc"
