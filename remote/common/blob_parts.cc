#include "remote/common/blob_parts.h"

#include <algorithm>

namespace dtlab::remote {

void forEachPart(std::span<const unsigned char> blob, std::size_t partBytes,
                 const std::function<void(uint64_t, std::span<const unsigned char>)>& part) {
  const std::size_t step = std::max<std::size_t>(partBytes, 1);
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(step, blob.size() - offset);
    part(offset, blob.subspan(offset, n));
    offset += n;
  } while (offset < blob.size());
}

std::string BlobJoiner::add(uint64_t total, uint64_t offset, std::string_view data) {
  if (offset == 0) {
    joining_ = false;
    bytes_.clear();
    if (total > maxBytes_)
      return "a blob of " + std::to_string(total) + " bytes, more than the " +
             std::to_string(maxBytes_) + " this side accepts";
    joining_ = true;
    total_ = total;
    bytes_.reserve(total);
  } else if (!joining_ || total != total_ || offset != bytes_.size()) {
    const std::string why =
        !joining_         ? "a part at offset " + std::to_string(offset) + " with no blob begun"
        : total != total_ ? "a part announcing " + std::to_string(total) + " bytes in a blob of " +
                                std::to_string(total_)
                          : "a part at offset " + std::to_string(offset) + " where " +
                                std::to_string(bytes_.size()) + " bytes were joined";
    joining_ = false;
    bytes_.clear();
    return why;
  }
  if (data.size() > total_ - bytes_.size()) {
    const std::string why = "parts past the blob's " + std::to_string(total_) + " bytes";
    joining_ = false;
    bytes_.clear();
    return why;
  }
  bytes_.insert(bytes_.end(), data.begin(), data.end());
  return {};
}

std::vector<unsigned char> BlobJoiner::take() {
  std::vector<unsigned char> out = std::move(bytes_);
  bytes_.clear();
  joining_ = false;
  total_ = 0;
  return out;
}

}  // namespace dtlab::remote
