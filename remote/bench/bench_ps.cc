// `dtlab-cli bench ps`: see bench_ps.h. The coordinator (runPsBench) starts one server and the
// workers as `bench ps-rank` processes of this binary and reads their JSON lines; the
// processes meet through files in a temporary directory (the server's port, Gloo's file store).
#include "remote/bench/bench_ps.h"

#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "core/comm/allreduce_tuning.h"
#include "core/comm/gloo_mesh.h"
#include "core/common/statistics.h"
#include "core/train/parameter_server.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/rank_processes.h"
#include "remote/common/protocol.h"
#include "remote/node/parameter_client.h"
#include "remote/node/parameter_service.h"
#include "remote/node/parameter_stream.h"

namespace dtlab::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kJob = "bench-ps";
constexpr const char* kToken = "bench-ps-token";
constexpr auto kTimeout = std::chrono::seconds(60);
// Gloo slots of the reference's two directions (every message of one direction on one pair
// arrives in order, so one slot each suffices).
constexpr uint64_t kGradientSlot = 0x70730001;
constexpr uint64_t kParameterSlot = 0x70730002;

// The parameters every pull must return: the gradients pushed are zeros and plain SGD moves
// nothing by them.
float initialValue(int64_t i) {
  return static_cast<float>(i % 1000) * 0.001f - 0.5f;
}

int64_t countWrong(const std::vector<float>& values) {
  int64_t wrong = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    wrong += values[i] != initialValue(static_cast<int64_t>(i)) ? 1 : 0;
  return wrong;
}

// Every process of the comparison in one Gloo context: the server is rank 0, worker w rank w+1.
struct GlooGroup {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;

  GlooGroup(const fs::path& dir, int rank, int size) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    device = gloo::transport::tcp::CreateDevice(attr);
    context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(kTimeout);
    fs::create_directories(dir / "gloo");
    gloo::rendezvous::FileStore store((dir / "gloo").string());
    context->connectFullMesh(store, device);
    core::warmUpSocketBuffers(context, kTimeout);  // as DTLab's own groups size their sockets
  }
  void barrier() const {
    gloo::BarrierOptions opts(context);
    opts.setTimeout(kTimeout);
    gloo::barrier(opts);
  }
};

core::ExperimentSpec serverSpec() {
  core::ExperimentSpec spec;
  spec.optimizer.kind = core::OptimizerKind::kSgd;
  spec.optimizer.momentum = 0.0f;
  return spec;
}

// The three ways of moving a step's bytes.
enum class Side { kStream, kGrpc, kGloo };
constexpr int kSides = 3;

// The rounds every process walks through alike: per round, each side once (the order rotates),
// each between two barriers of all the processes.
template <typename Run>
void forEachSide(const PsBenchOptions& o, const GlooGroup& group, Run&& run) {
  for (int round = 0; round < o.warmup + o.repetitions; ++round) {
    for (int k = 0; k < kSides; ++k) {
      group.barrier();
      run(static_cast<Side>((round + k) % kSides), round >= o.warmup);
      group.barrier();
    }
  }
}

void runServer(const PsRankOptions& options, std::FILE* out) {
  const PsBenchOptions& o = options.bench;
  const fs::path dir = options.dir;
  const std::vector<core::PsBlock> layout = core::psLayout(o.params, 1);
  const int64_t updates = int64_t{o.warmup + o.repetitions} * o.steps * o.workers;
  remote::ParameterTable table;
  table.install(
      kJob, std::make_shared<core::ParameterHost>(serverSpec(), layout, 0, o.workers, 64, updates));
  remote::ParameterStreamServer stream(table, "127.0.0.1");
  remote::ParameterService service(table, kToken, &stream);
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(remote::kMaxRequestBytes);
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) throw std::runtime_error("the parameter server could not listen");
  { std::ofstream(dir / "port.tmp") << port; }
  fs::rename(dir / "port.tmp", dir / "port");

  GlooGroup group(dir, 0, o.workers + 1);
  const std::size_t n = static_cast<std::size_t>(o.params);
  std::vector<float> parameters(n);
  for (std::size_t i = 0; i < n; ++i) parameters[i] = initialValue(static_cast<int64_t>(i));
  std::vector<std::vector<float>> gradients(static_cast<std::size_t>(o.workers),
                                            std::vector<float>(n));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> receives, sends;
  for (int w = 0; w < o.workers; ++w) {
    receives.push_back(group.context->createUnboundBuffer(
        gradients[static_cast<std::size_t>(w)].data(), n * sizeof(float)));
    sends.push_back(group.context->createUnboundBuffer(parameters.data(), n * sizeof(float)));
  }
  group.barrier();  // worker 0 has initialised the blocks
  forEachSide(o, group, [&](Side side, bool) {
    if (side != Side::kGloo) return;  // the stream's and gRPC's threads serve them
    for (int s = 0; s < o.steps; ++s) {
      for (int w = 0; w < o.workers; ++w)
        receives[static_cast<std::size_t>(w)]->recv(w + 1, kGradientSlot);
      for (auto& r : receives) r->waitRecv(kTimeout);
      for (int w = 0; w < o.workers; ++w)
        sends[static_cast<std::size_t>(w)]->send(w + 1, kParameterSlot);
      for (auto& s2 : sends) s2->waitSend(kTimeout);
    }
  });
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  std::fprintf(out, "%s\n", nlohmann::json{{"role", "server"}}.dump().c_str());
}

void runWorker(const PsRankOptions& options, std::FILE* out) {
  const PsBenchOptions& o = options.bench;
  const fs::path dir = options.dir;
  const auto deadline = Clock::now() + kTimeout;
  while (!fs::exists(dir / "port")) {
    if (Clock::now() > deadline) throw std::runtime_error("the server never reported its port");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int port = 0;
  std::ifstream(dir / "port") >> port;
  remote::ParameterClientOptions client;
  client.jobId = kJob;
  client.addresses = {"127.0.0.1:" + std::to_string(port)};
  client.names = {"server"};
  client.token = kToken;
  remote::GrpcParameterClient ps(core::psLayout(o.params, 1), client);
  client.stream = false;
  remote::GrpcParameterClient psGrpc(core::psLayout(o.params, 1), client);

  GlooGroup group(dir, options.rank + 1, o.workers + 1);
  const std::size_t n = static_cast<std::size_t>(o.params);
  std::vector<float> parameters(n), gradient(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) parameters[i] = initialValue(static_cast<int64_t>(i));
  if (options.rank == 0) ps.init(parameters.data());
  group.barrier();
  auto gradientSend = group.context->createUnboundBuffer(gradient.data(), n * sizeof(float));
  auto parameterReceive = group.context->createUnboundBuffer(parameters.data(), n * sizeof(float));

  std::vector<int64_t> versions;
  int64_t clock = 0;
  int64_t wrong = 0;
  std::vector<double> streamMs, grpcMs, glooMs;
  forEachSide(o, group, [&](Side side, bool timed) {
    std::fill(parameters.begin(), parameters.end(), 0.0f);
    const auto start = Clock::now();
    for (int s = 0; s < o.steps; ++s) {
      if (side != Side::kGloo) {
        remote::GrpcParameterClient& client = side == Side::kStream ? ps : psGrpc;
        client.pull(parameters.data(), versions);
        core::WorkerReport report;
        report.worker = options.rank;
        report.clock = ++clock;
        client.push(gradient.data(), versions, report);
      } else {
        gradientSend->send(0, kGradientSlot);
        parameterReceive->recv(0, kParameterSlot);
        gradientSend->waitSend(kTimeout);
        parameterReceive->waitRecv(kTimeout);
      }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count() / o.steps;
    wrong += countWrong(parameters);
    if (timed)
      (side == Side::kStream ? streamMs : side == Side::kGrpc ? grpcMs : glooMs).push_back(ms);
  });
  std::fprintf(out, "%s\n",
               nlohmann::json{{"role", "worker"},
                              {"rank", options.rank},
                              {"stream_ms", streamMs},
                              {"grpc_ms", grpcMs},
                              {"gloo_ms", glooMs},
                              {"wrong", wrong}}
                   .dump()
                   .c_str());
}

// Per repetition, the slowest worker's time; then the median.
double slowestMedian(const std::vector<nlohmann::json>& workers, const char* key) {
  std::vector<double> slowest;
  for (std::size_t r = 0; r < workers.front().at(key).size(); ++r) {
    double worst = 0.0;
    for (const nlohmann::json& w : workers) worst = std::max(worst, w.at(key)[r].get<double>());
    slowest.push_back(worst);
  }
  return core::median(slowest);
}

}  // namespace

void runPsRank(const PsRankOptions& options, std::FILE* out) {
  if (options.role == "server") return runServer(options, out);
  if (options.role == "worker") return runWorker(options, out);
  throw std::runtime_error("bench ps-rank: --role is server or worker, not " + options.role);
}

PsBenchResult runPsBench(const PsBenchOptions& o, std::FILE* out) {
  const ScratchDir scratch("dtlab-bench-ps");
  const fs::path& dir = scratch.path();
  const int64_t bytes = o.params * static_cast<int64_t>(sizeof(float));
  std::fprintf(out,
               "bench ps: one parameter-server process serving every block of %lld parameters "
               "(%zu blocks) over its stream and over gRPC, %d worker processes; per step each "
               "worker pulls every block and pushes a gradient to every block "
               "(GrpcParameterClient, as async_ps does: over the stream, as in plain text, and "
               "over gRPC alone, as with TLS) against sending the gradient's bytes to the "
               "server and receiving the "
               "parameters' bytes back over Gloo pairs (the same processes); %d steps per "
               "repetition, %d timed repetitions after %d, sides interleaved, the slowest "
               "worker's time per step, medians\n  %s\n\n",
               static_cast<long long>(o.params), core::psLayout(o.params, 1).size(), o.workers,
               o.steps, o.repetitions, o.warmup, machineDescription().c_str());
  std::fflush(out);

  auto args = [&](const std::string& role, int rank) {
    return std::vector<std::string>{"bench",     "ps-rank",
                                    "--role",    role,
                                    "--rank",    std::to_string(rank),
                                    "--dir",     dir.string(),
                                    "--params",  std::to_string(o.params),
                                    "--workers", std::to_string(o.workers),
                                    "--steps",   std::to_string(o.steps),
                                    "--reps",    std::to_string(o.repetitions),
                                    "--warmup",  std::to_string(o.warmup)};
  };
  std::vector<pid_t> pids{spawnSelf(args("server", 0), dir / "out-server")};
  for (int w = 0; w < o.workers; ++w)
    pids.push_back(spawnSelf(args("worker", w), dir / ("out-worker-" + std::to_string(w))));
  waitAll(pids, "bench ps");
  std::vector<nlohmann::json> workers;
  PsBenchResult result;
  for (int w = 0; w < o.workers; ++w) {
    workers.push_back(lastJsonLine(dir / ("out-worker-" + std::to_string(w))));
    result.wrong += workers.back().at("wrong").get<int64_t>();
  }
  result.dtlabMs = slowestMedian(workers, "stream_ms");
  result.grpcMs = slowestMedian(workers, "grpc_ms");
  result.glooMs = slowestMedian(workers, "gloo_ms");
  result.ratio = result.dtlabMs / result.glooMs;
  result.grpcRatio = result.grpcMs / result.glooMs;
  std::fprintf(out,
               "| parameters | workers | bytes each way per step and worker | DTLab pull + push, "
               "stream (ms) | DTLab over gRPC only, as with TLS (ms) | Gloo send + receive (ms) "
               "| stream / Gloo (time; target <= 1.5) | gRPC / Gloo | wrong |\n"
               "|---|---|---|---|---|---|---|---|---|\n"
               "| %lld | %d | %s | %.2f | %.2f | %.2f | **%.2fx** | %.2fx | %lld |\n",
               static_cast<long long>(o.params), o.workers, core::byteSizeText(bytes).c_str(),
               result.dtlabMs, result.grpcMs, result.glooMs, result.ratio, result.grpcRatio,
               static_cast<long long>(result.wrong));
  result.json = {{"bench", "ps"},
                 {"machine", machineDescription()},
                 {"params", o.params},
                 {"workers", o.workers},
                 {"steps", o.steps},
                 {"repetitions", o.repetitions},
                 {"bytes_each_way", bytes},
                 {"dtlab_ms", result.dtlabMs},
                 {"grpc_ms", result.grpcMs},
                 {"grpc_ratio", result.grpcRatio},
                 {"gloo_ms", result.glooMs},
                 {"ratio", result.ratio},
                 {"per_worker", workers},
                 {"wrong", result.wrong}};
  return result;
}

}  // namespace dtlab::bench
