#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/spec/experiment_spec.h"
#include "remote/common/tls.h"

namespace dtlab::remote {

// How a dtlab-node was started (app/node_main.cc parses these from flags).
struct NodeOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  int slots = 1;                       // --devices cpu:N: CPU workers at once
  // --devices cuda:N,...: the GPUs this daemon's workers train on, one worker each, when a spec
  // asks for cluster.device "cuda", as described when the flag was checked; empty: CPU only.
  std::vector<core::DeviceDescription> gpus;
  double speed = 1.0;          // emulated compute speed (1 = real)
  double bandwidthMbps = 0.0;  // emulated link, 0 = unlimited
  double latencyMs = 0.0;
  // --speed-schedule and --straggler: what a job gets when its spec's entry has none.
  std::vector<core::SpeedChange> speedSchedule;
  core::StragglerConfig straggler;
  std::string token;  // required unless listening on loopback
  // --tls-cert/--tls-key/--tls-ca: mutual TLS on every service (remote/common/tls.h); required
  // unless listening on loopback or `insecure` (--insecure: plain text on a network the user
  // trusts).
  TlsFiles tls;
  bool insecure = false;
  int threads = 1;   // CPU threads of the worker's backend
  std::string name;  // empty: "<hostname>:<port>"
  // How long a rank waits for its peers when building the collective group (a job may ask
  // for another value).
  std::chrono::milliseconds connectTimeout{30000};
  // The host peers reach this node's collectives at (--advertise); empty: the --listen
  // host when it is a specific address, else the host the coordinator dialled.
  std::string advertise;
};

}  // namespace dtlab::remote
