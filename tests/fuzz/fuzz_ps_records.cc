// The parameter-server record codec (core/train/push_record.h) on a damaged or hostile chunk,
// as `dtlab-cli replay` reads one from a project: a chunk is refused with dtlab::Error naming
// what is wrong, or decodes to records that encode and decode back to the same records.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/common/check.h"
#include "core/train/push_record.h"
#include "tests/fuzz/fuzz_support.h"

using namespace dtlab::core;
using dtlab::fuzz::finding;

namespace {

bool sameRecords(const PsRecordChunk& a, const PsRecordChunk& b) {
  if (a.pushes.size() != b.pushes.size() || a.replicas.size() != b.replicas.size()) return false;
  for (std::size_t i = 0; i < a.pushes.size(); ++i) {
    const PushRecord& x = a.pushes[i];
    const PushRecord& y = b.pushes[i];
    if (x.worker != y.worker || x.clock != y.clock || x.basedOn != y.basedOn ||
        x.appliedTo != y.appliedTo || x.gradient != y.gradient)
      return false;
  }
  for (std::size_t i = 0; i < a.replicas.size(); ++i)
    if (a.replicas[i].worker != b.replicas[i].worker ||
        a.replicas[i].versions != b.replicas[i].versions)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  PsRecordChunk chunk;
  try {
    chunk = decodePsRecords(std::span<const unsigned char>(data, size));
  } catch (const dtlab::Error&) {
    return 0;  // refused, as it should be
  }
  const std::vector<unsigned char> again = encodePsRecords(chunk);
  PsRecordChunk back;
  try {
    back = decodePsRecords(again);
  } catch (const dtlab::Error&) {
    finding("a decoded chunk encoded to bytes that do not decode", input);
  }
  if (!sameRecords(chunk, back)) finding("a chunk did not survive encode and decode", input);
  return 0;
}
