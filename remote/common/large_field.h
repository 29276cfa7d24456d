#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

namespace dtlab::remote {

// Messages that carry one large `bytes` field (a parameter block's floats) beside a few small
// ones, read and written on gRPC's own buffers. The large field's bytes go from the wire
// straight to where they are used and from where they are made straight into the message:
// none of the copies a std::string field costs (protobuf's parse into it, its serialisation
// out of it, the zero fill of a resize). What travels is the message's ordinary protobuf
// encoding, so a peer using the generated classes reads and writes the same calls
// (tests/fuzz/fuzz_rpc.cc sends them hostile bytes through the generic API).

// The large field's bytes, allocated once (uninitialised, aligned for any scalar) and handed
// to the message without a copy.
class LargeField {
 public:
  explicit LargeField(std::size_t bytes);
  char* data() { return data_; }
  std::size_t size() const { return slice_.size(); }
  const grpc::Slice& slice() const { return slice_; }

 private:
  char* data_ = nullptr;
  grpc::Slice slice_;
};

// `rest` (whose large field is left empty) followed by field `largeField` holding `payload`.
grpc::ByteBuffer serializeWithLargeField(const google::protobuf::Message& rest, int largeField,
                                         const LargeField& payload);

// Called where the large field starts, with its length: consumes exactly that many bytes of
// `in` (ReadRaw, readFloatChunks) and returns "", or returns what is wrong with them.
using LargeFieldReader =
    std::function<std::string(google::protobuf::io::CodedInputStream& in, int bytes)>;

// Parses `buffer` as a message of rest's type: every field but field `largeField` (when
// length-delimited) into `rest`, that one's bytes through `read`, each time it occurs (the
// last counts, as in protobuf). Returns "" or why the bytes are not such a message.
std::string parseWithLargeField(const grpc::ByteBuffer& buffer, int largeField,
                                google::protobuf::Message& rest, const LargeFieldReader& read);

// Reads `count` little-endian floats from `in` a chunk at a time into an aligned scratch
// buffer that stays in cache, and hands each chunk with the offset of its first float to
// `use`: the bytes on the wire need not be aligned nor in one piece. False when `in` ends
// first.
bool readFloatChunks(google::protobuf::io::CodedInputStream& in, int64_t count,
                     const std::function<void(const float* chunk, int64_t offset, int64_t n)>& use);

// A small message to and from a ByteBuffer (the other side of a call that has a large field).
grpc::ByteBuffer toByteBuffer(const google::protobuf::Message& message);
bool fromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::Message& message);

}  // namespace dtlab::remote
