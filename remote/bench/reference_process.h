#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// A reference implementation running beside DTLab's side of a benchmark, as a child process
// that speaks one JSON object per line: it announces itself with a first line once it has
// set up and warmed up, then answers each request line with one line. Requests let the
// harness interleave the reference's repetitions with its own. The child's stderr is ours;
// closing its stdin (the destructor) asks it to exit.
class ReferenceProcess {
 public:
  // argv[0] is looked up on PATH; `env` entries are added to (or replace) ours.
  ReferenceProcess(std::vector<std::string> argv, const std::map<std::string, std::string>& env);
  ~ReferenceProcess();
  ReferenceProcess(const ReferenceProcess&) = delete;
  ReferenceProcess& operator=(const ReferenceProcess&) = delete;

  // The next line that is a JSON object (other output is skipped); throws if the process
  // ends or stays silent for `timeout`.
  nlohmann::json readJson(std::chrono::seconds timeout = std::chrono::seconds(300));
  // Sends one request line and returns the answer.
  nlohmann::json request(const std::string& line,
                         std::chrono::seconds timeout = std::chrono::seconds(300));

 private:
  std::string command_;
  pid_t pid_ = -1;
  int toChild_ = -1;
  int fromChild_ = -1;
  std::string buffered_;
};

// Debian's PyTorch reference (the package python3-torch): a Python that can import torch,
// the reference scripts' folder, and the BLAS it will run on with the OpenBLAS kernel chosen
// by measurement (resources/bench/blas_probe.py).
struct TorchReference {
  std::string python;
  std::string scripts;  // resources/bench
  nlohmann::json blas;  // blas_probe.py's report
  // OPENBLAS_CORETYPE (when a kernel beats auto-detection) and the thread counts of
  // OpenBLAS and OpenMP, for a reference process running `threads` threads.
  std::map<std::string, std::string> environment(int threads) const;
};

// Finds PyTorch and measures the OpenBLAS kernels at `threads` threads; nullopt (after
// saying so on `out`) when PyTorch is not installed.
std::optional<TorchReference> findTorchReference(int threads, std::FILE* out);

// Prints the BLAS the reference runs on, the kernels measured and the one chosen, and warns
// when it is not OpenBLAS's OpenMP build (the reference BLAS is some 50 times slower, and
// the pthread build fights PyTorch's own OpenMP threads).
void printBlasChoice(const TorchReference& reference, std::FILE* out);

// Where a part of resources/ lives ("bench": the reference scripts, "specs": the example
// specs): $DTLAB_RESOURCES/<part>; else, for an installed program, its <prefix>/share/dtlab's
// copy (bench/, examples/); else the source tree this binary was built from.
std::string resourcesDir(const std::string& part);

}  // namespace dtlab::bench
