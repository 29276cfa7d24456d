#include "remote/common/large_field.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpc/slice.h>
#include <grpcpp/support/proto_buffer_reader.h>

namespace dtlab::remote {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

uint32_t largeTag(int field) {
  return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// 64 KiB: well inside L2, so the copy into it and the reads from it stay in cache.
constexpr int64_t kChunkFloats = 16 * 1024;

}  // namespace

LargeField::LargeField(std::size_t bytes) {
  // malloc's alignment suits any scalar; gRPC frees it with the slice's last reference (the
  // transport may hold one after the call ends), never before.
  void* memory = std::malloc(std::max<std::size_t>(bytes, 1));
  if (memory == nullptr) throw std::bad_alloc();
  data_ = static_cast<char*>(memory);
  slice_ = grpc::Slice(
      grpc_slice_new_with_len(memory, bytes, [](void* p, std::size_t) { std::free(p); }),
      grpc::Slice::STEAL_REF);
}

grpc::ByteBuffer serializeWithLargeField(const google::protobuf::Message& rest, int largeField,
                                         const LargeField& payload) {
  std::string head = rest.SerializeAsString();
  uint8_t prefix[10];  // two varints of at most 5 bytes each
  uint8_t* end = CodedOutputStream::WriteTagToArray(largeTag(largeField), prefix);
  end = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(payload.size()), end);
  head.append(reinterpret_cast<const char*>(prefix), static_cast<std::size_t>(end - prefix));
  const grpc::Slice slices[2] = {grpc::Slice(head), payload.slice()};
  return grpc::ByteBuffer(slices, payload.size() == 0 ? 1 : 2);
}

std::string parseWithLargeField(const grpc::ByteBuffer& buffer, int largeField,
                                google::protobuf::Message& rest, const LargeFieldReader& read) {
  grpc::ByteBuffer shared(buffer);  // the same slices, referenced
  const int64_t size = static_cast<int64_t>(shared.Length());
  grpc::ProtoBufferReader reader(&shared);
  if (!reader.status().ok()) return "the message could not be read";
  std::string others;  // every other field, as it came, for rest's own parser
  {
    CodedInputStream in(&reader);
    google::protobuf::io::StringOutputStream sink(&others);
    CodedOutputStream out(&sink);
    for (;;) {
      const int64_t at = in.CurrentPosition();
      const uint32_t tag = in.ReadTag();
      if (tag == 0) {
        if (at != size) return "no valid field at byte " + std::to_string(at);
        break;
      }
      if (tag == largeTag(largeField)) {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length) || int64_t{length} > size - in.CurrentPosition())
          return "field " + std::to_string(largeField) + " at byte " + std::to_string(at) +
                 " runs past the end of the message";
        const int64_t start = in.CurrentPosition();
        const std::string why = read(in, static_cast<int>(length));
        if (!why.empty()) return why;
        if (in.CurrentPosition() != start + length)
          return "field " + std::to_string(largeField) + " was not read whole";
        continue;
      }
      if (!WireFormatLite::SkipField(&in, tag, &out))
        return "the field at byte " + std::to_string(at) + " is malformed";
    }
  }
  if (!rest.ParseFromString(others)) return "its small fields do not parse";
  return "";
}

bool readFloatChunks(CodedInputStream& in, int64_t count,
                     const std::function<void(const float*, int64_t, int64_t)>& use) {
  std::vector<float> chunk(static_cast<std::size_t>(std::min(count, kChunkFloats)));
  for (int64_t offset = 0; offset < count;) {
    const int64_t n = std::min(count - offset, kChunkFloats);
    if (!in.ReadRaw(chunk.data(), static_cast<int>(n * sizeof(float)))) return false;
    use(chunk.data(), offset, n);
    offset += n;
  }
  return true;
}

grpc::ByteBuffer toByteBuffer(const google::protobuf::Message& message) {
  const grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

bool fromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::Message& message) {
  grpc::ByteBuffer shared(buffer);
  grpc::ProtoBufferReader reader(&shared);
  return reader.status().ok() && message.ParseFromZeroCopyStream(&reader);
}

}  // namespace dtlab::remote
