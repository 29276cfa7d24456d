// Shared by the fuzz targets: a finding is reported by aborting, which libFuzzer (and the
// replay driver, through the exit status) records with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/common/check.h"

namespace dtlab::fuzz {

// The input as printable text, cut to a readable length.
inline std::string shown(std::string_view input) {
  std::string out;
  for (const char c : input.substr(0, 400)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    }
  }
  if (input.size() > 400) out += "...";
  return out;
}

[[noreturn]] inline void finding(const std::string& what, std::string_view input = {}) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  if (!input.empty()) std::fprintf(stderr, "  input: %s\n", shown(input).c_str());
  std::abort();
}

// A message made for a user: not empty and not an internal invariant's report.
inline void requireUserMessage(const std::exception& e, std::string_view input) {
  const std::string message = e.what();
  if (message.empty()) finding("an error with no message", input);
  if (dynamic_cast<const EnforceError*>(&e) != nullptr)
    finding("an internal invariant broke: " + message, input);
}

// For a target whose seeds are files DTLab writes (projects, RPC requests): with
// DTLAB_FUZZ_WRITE_SEEDS=DIR in the environment, LLVMFuzzerInitialize writes them into DIR
// and the process ends. Returns 0 otherwise, as LLVMFuzzerInitialize must.
template <typename Write>
int writeSeedsIfAsked(Write&& write) {
  const char* dir = std::getenv("DTLAB_FUZZ_WRITE_SEEDS");
  if (dir == nullptr || *dir == '\0') return 0;
  try {
    write(std::filesystem::path(dir));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writing the seeds into %s: %s\n", dir, e.what());
    std::exit(1);
  }
  std::fprintf(stderr, "seeds written into %s\n", dir);
  std::exit(0);
}

}  // namespace dtlab::fuzz
