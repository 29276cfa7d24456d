#include "remote/node/node_server.h"

#include <unistd.h>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "core/common/check.h"
#include "core/common/log.h"
#include "remote/common/auth.h"
#include "remote/common/protocol.h"
#include "remote/common/tls_credentials.h"

namespace dtlab::remote {

namespace {

constexpr std::chrono::milliseconds kStreamDrain{2000};
constexpr std::chrono::milliseconds kKeepaliveTime{1000};
constexpr std::chrono::milliseconds kKeepaliveTimeout{2000};

std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string localHostName() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "node";
  return buffer;
}

}  // namespace

NodeServer::NodeServer(NodeOptions options) : options_(std::move(options)) {
  const HostPort listen = parseHostPort(options_.listen, "--listen");
  host_ = listen.host;
  if (options_.token.empty() && !isLoopbackHost(host_))
    throw Error("--listen " + options_.listen +
                " is not a loopback address: a --token is required so that only your "
                "coordinator can start jobs on this node");
  if (!options_.tls.enabled() && !options_.insecure && !isLoopbackHost(host_))
    throw Error("--listen " + options_.listen +
                " is not a loopback address: its calls, the token and every gradient would cross "
                "the network in clear text. Give --tls-cert, --tls-key and --tls-ca (dtlab-node "
                "gen-certs DIR --hosts ... makes them), or --insecure on a private network you "
                "trust");
  checkTlsFiles(options_.tls);
  DTLAB_ENFORCE(options_.slots >= 1 && options_.threads >= 1 && options_.speed > 0.0,
                "invalid node options");

  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would silently
  // share it instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Keepalive pings on every connection with a call in flight: a coordinator whose host or
  // network went silent (no reset ever arrives) loses its WatchJob streams within
  // kKeepaliveTime + kKeepaliveTimeout, and with them its lease on the job (job.h).
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(kKeepaliveTime.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(kKeepaliveTimeout.count()));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddListeningPort(bracketed(host_) + ":" + std::to_string(listen.port),
                           serverCredentials(options_.tls), &port_);
  rendezvousService_ = std::make_unique<RendezvousService>(table_, options_.token);
  builder.RegisterService(rendezvousService_.get());
  // In plain text the parameter server's pulls and pushes also go over a stream beside gRPC
  // (parameter_stream.h), ~2x faster; with TLS they stay inside it.
  if (!options_.tls.enabled()) {
    try {
      stream_ = std::make_unique<ParameterStreamServer>(parameters_, host_);
    } catch (const std::exception& e) {
      logAt(LogLevel::kWarn, "no parameter stream (pulls and pushes over gRPC only): ", e.what());
    }
  }
  parameterService_ =
      std::make_unique<ParameterService>(parameters_, options_.token, stream_.get());
  builder.RegisterService(parameterService_.get());
  nodeService_ = std::make_unique<NodeService>(options_, host_, table_, hub_, parameters_);
  builder.RegisterService(nodeService_.get());
  // The default name needs the bound port; until it is set (microseconds) it is the host.
  name_ = options_.name.empty() ? localHostName() : options_.name;
  nodeService_->setName(name_);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0)
    throw Error("cannot listen on " + options_.listen +
                " (address in use, not an address of this machine, or not permitted)");
  if (options_.name.empty()) {
    name_ = localHostName() + ":" + std::to_string(port_);
    nodeService_->setName(name_);
  }
  logAt(LogLevel::kInfo, "listening on ", address(),
        options_.tls.enabled() ? " (mutual TLS" : " (plain text",
        options_.token.empty() ? ")" : ", token required)");
}

NodeServer::~NodeServer() {
  shutdown();
}

std::string NodeServer::address() const {
  return bracketed(host_) + ":" + std::to_string(port_);
}

bool NodeServer::shutdown(std::chrono::milliseconds jobGrace) {
  if (stopped_) return jobEnded_;
  stopped_ = true;
  logAt(LogLevel::kInfo, "shutting down");
  jobEnded_ = true;
  const auto deadline = std::chrono::steady_clock::now() + jobGrace;
  for (const std::shared_ptr<Job>& job : nodeService_->beginShutdown()) {
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    if (job->waitEnded(left)) continue;
    jobEnded_ = false;
    core::WorkerResult result;
    result.status = core::RunStatus::kCancelled;
    result.stopReason = core::StopReason::kCancelled;
    result.error = "node " + name_ + " shut down while the job was still starting";
    job->buffer().finish(result);
    logAt(LogLevel::kWarn, "job ", job->id(), " did not stop within ", jobGrace.count(), " ms");
  }
  hub_.waitAllDone(kStreamDrain);
  table_.shutdown();
  parameters_.clear();
  // The watch streams had their drain above; whatever the server still holds (a call in
  // flight, a client's idle connection, which gRPC would otherwise wait out to the deadline)
  // is cancelled now, so the daemon exits at once.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  stream_.reset();  // after the service that hands out its port; ends its connections
  hub_.stop();
  logAt(LogLevel::kInfo, "stopped");
  return jobEnded_;
}

}  // namespace dtlab::remote
