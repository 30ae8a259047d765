#include "vkube/common/status.h"

namespace vkube {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kConflict: return "Conflict";
    case Code::kInvalid: return "Invalid";
    case Code::kBadRequest: return "BadRequest";
    case Code::kMethodNotAllowed: return "MethodNotAllowed";
    case Code::kNotAcceptable: return "NotAcceptable";
    case Code::kUnsupportedMediaType: return "UnsupportedMediaType";
    case Code::kUnauthorized: return "Unauthorized";
    case Code::kForbidden: return "Forbidden";
    case Code::kExpired: return "Expired";
    case Code::kTooLarge: return "RequestEntityTooLarge";
    case Code::kTooManyRequests: return "TooManyRequests";
    case Code::kFutureRevision: return "FutureRevision";
    case Code::kTimeout: return "Timeout";
    case Code::kUnavailable: return "ServiceUnavailable";
    case Code::kCancelled: return "Cancelled";
    case Code::kCorruption: return "Corruption";
    case Code::kInternal: return "InternalError";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  std::string out(code_name(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace vkube
