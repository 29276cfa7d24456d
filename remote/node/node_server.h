#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/server.h>

#include "remote/node/node_options.h"
#include "remote/node/node_service.h"
#include "remote/node/parameter_service.h"
#include "remote/node/parameter_stream.h"
#include "remote/node/rendezvous_service.h"
#include "remote/node/rendezvous_table.h"
#include "remote/node/watch_hub.h"

namespace dtlab::remote {

// A running dtlab-node: the gRPC server with the NodeService, the Rendezvous service and the
// ParameterServer service (and, in plain text, the parameter server's stream beside it).
// The constructor validates the options (a token is required unless listening on
// loopback), binds and starts serving; it throws dtlab::Error with a message for the user
// when it cannot.
class NodeServer {
 public:
  explicit NodeServer(NodeOptions options);
  ~NodeServer();
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  int port() const { return port_; }
  // "host:port" as the node listens (the host as given in --listen).
  std::string address() const;
  const std::string& name() const { return name_; }

  // Clean stop, in order:
  //   1. refuse new jobs, cancel the running one (it stops at its next step boundary),
  //   2. wait up to jobGrace for it to end; if it does not (e.g. stuck connecting to peers),
  //      publish a "cancelled" result for it so watchers still get their final message,
  //   3. give open WatchJob streams a moment to deliver that final message,
  //   4. end pending rendezvous waits (UNAVAILABLE), shut the server down with a deadline
  //      (calls still open after it are cancelled), stop the stream thread.
  // Returns false when the job thread is still running (the caller should then exit the
  // process without running destructors). Idempotent.
  bool shutdown(std::chrono::milliseconds jobGrace = std::chrono::seconds(10));

 private:
  NodeOptions options_;
  std::string host_;
  int port_ = 0;
  std::string name_;
  RendezvousTable table_;
  ParameterTable parameters_;
  // Pulls and pushes outside gRPC (parameter_stream.h); none when serving TLS.
  std::unique_ptr<ParameterStreamServer> stream_;
  std::unique_ptr<ParameterService> parameterService_;
  WatchHub hub_;
  std::unique_ptr<RendezvousService> rendezvousService_;
  std::unique_ptr<NodeService> nodeService_;
  std::unique_ptr<grpc::Server> server_;
  bool stopped_ = false;
  bool jobEnded_ = true;
};

}  // namespace dtlab::remote
