#pragma once
// The models the scale simulator (issue 24) predicts with: a node's compute, a link's cost and
// the closed forms of the collectives, as every strategy's model (step_models.h) uses them.
// Times in seconds, sizes in bytes.
#include <cstdint>
#include <vector>

namespace dtlab::core::sim {

// A link between two nodes: the time of one message of S bytes is latency + S / bandwidth.
struct LinkModel {
  double latencyS = 0.0;
  double bytesPerS = 1.25e9;  // 10 Gbit/s
};

// One message over `link`.
double transferSeconds(double bytes, const LinkModel& link);
// Ring all-reduce of `bytes` over `ranks`: a reduce-scatter and an all-gather of 2(n-1) steps,
// each sending bytes / n: 2(n-1) * latency + 2(n-1)/n * bytes / bandwidth (0 for one rank).
double ringAllReduceSeconds(int ranks, double bytes, const LinkModel& link);
// Binomial-tree reduce then broadcast: 2 ceil(log2 n) messages of the whole buffer in sequence.
double treeAllReduceSeconds(int ranks, double bytes, const LinkModel& link);

// A node's compute: a step of s samples takes fixed + s * secondsPerSample (times a draw from
// its shape and its host's stretches, where it has them), and with probability
// stragglerProbability a further stragglerPauseS (an emulated or measured pause).
struct NodeModel {
  double secondsPerSample = 1e-4;
  double fixedSeconds = 0.0;
  double stragglerProbability = 0.0;
  double stragglerPauseS = 0.0;
  // Its host's cores shared with other nodes (core/sim/host_sharing.h): each step's compute is
  // stretched by one of `stretches`, drawn by their cumulative probabilities `stretchCdf`;
  // empty: never stretched.
  std::vector<double> stretches;
  std::vector<double> stretchCdf;
  // Each step's compute is the line times one of these, equally likely (a calibrated fit's
  // shape, core/sim/calibration.h): the measured skew and tail about the line. Empty: the line.
  std::vector<double> shape;

  // Seconds of a step of `samples`, its shape, pauses and stretches averaged in.
  double meanSeconds(int64_t samples) const;
  double meanShape() const;    // 1 when it has none
  double meanStretch() const;  // 1 when never stretched
};

// What the model moves: its parameters' bytes and, for an overlapped all-reduce, its gradient
// buckets in the order backward finishes them with the share of backward done at each.
struct ModelShape {
  double parameterBytes = 0.0;
  std::vector<double> bucketBytes;   // empty: one bucket of every parameter, ready at the end
  std::vector<double> bucketReady;   // per bucket, in (0, 1], increasing; the last 1
  double backwardShare = 2.0 / 3.0;  // of a step's compute: backward (forward is the rest)
};

struct ClusterModel {
  std::vector<NodeModel> nodes;
  LinkModel link;        // the collectives' (all-reduce)
  LinkModel serverLink;  // the parameter server's pulls and pushes
  // Shards that can serve at once (ParameterServerModel::parallelism): the cores of the host
  // a local cluster's nodes share; 0: every node a host of its own.
  int serverParallelism = 0;
  // A bounded-staleness worker's clock check with the server, each step (ssp).
  double clockCheckS = 0.0;
};

}  // namespace dtlab::core::sim
