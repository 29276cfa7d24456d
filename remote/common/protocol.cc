#include "remote/common/protocol.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "remote/common/tls.h"

namespace dtlab::remote {

grpc::Status checkProtocolVersion(uint32_t clientVersion) {
  if (clientVersion == kProtocolVersion) return grpc::Status::OK;
  return {grpc::StatusCode::FAILED_PRECONDITION,
          "protocol version mismatch: the client speaks version " + std::to_string(clientVersion) +
              ", this node speaks version " + std::to_string(kProtocolVersion) +
              " (use a dtlab of the same version on both sides)"};
}

grpc::Status checkFieldSize(std::string_view field, std::size_t size, std::size_t limit) {
  if (size <= limit) return grpc::Status::OK;
  return {grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + ": " + std::to_string(size) +
                                                  " bytes exceeds the limit of " +
                                                  std::to_string(limit) + " bytes"};
}

const char* statusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN_STATUS_CODE";
  }
}

std::string randomId(std::string_view prefix) {
  std::random_device random;
  const uint64_t bits = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(bits));
  return std::string(prefix) + text;
}

const std::string& ownerOfThisProcess() {
  static const std::string owner = [] {
    std::string user = "uid " + std::to_string(::geteuid());
    if (const passwd* entry = ::getpwuid(::geteuid());
        entry != nullptr && entry->pw_name != nullptr)
      user = entry->pw_name;
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return host[0] == '\0' ? user : user + "@" + host;
  }();
  return owner;
}

std::string runNameOf(const std::string& specJson, int variant) {
  const nlohmann::json spec = nlohmann::json::parse(specJson, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return {};
  std::string name = spec.value("name", std::string());
  const nlohmann::json variants = spec.value("variants", nlohmann::json::array());
  if (variants.is_array() && variant >= 0 && variant < static_cast<int>(variants.size()) &&
      variants[static_cast<std::size_t>(variant)].is_object()) {
    const nlohmann::json& v = variants[static_cast<std::size_t>(variant)];
    const std::string label = v.value("name", v.value("strategy", std::string()));
    if (!label.empty()) name += "/" + label;
  }
  return name;
}

std::string describeRun(const std::string& owner, const std::string& runName,
                        const std::string& jobId) {
  std::string what = runName.empty() ? std::string() : "run '" + runName + "'";
  if (!jobId.empty()) what += what.empty() ? "job " + jobId : " (job " + jobId + ")";
  if (what.empty()) what = "a run";
  return owner.empty() ? what : owner + "'s " + what;
}

std::string describeStatus(const grpc::Status& status) {
  std::string out = statusCodeName(status.error_code());
  if (!status.error_message().empty()) out += ": " + status.error_message();
  return out;
}

std::string describeStatus(const grpc::Status& status, const std::string& address, bool tls) {
  std::string out = describeStatus(status);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    const std::string hint = tlsHint(status.error_message(), address, tls);
    if (!hint.empty()) out += " (" + hint + ")";
  }
  return out;
}

}  // namespace dtlab::remote
