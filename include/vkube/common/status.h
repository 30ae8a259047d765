// Status and Result<T>: how every vkube module reports failure.
//
// No exceptions cross a module or async boundary (see ../shared/STYLE.md §5):
// functions return a Status, or a Result<T> holding either a value or a
// non-OK Status. Codes follow the Kubernetes Status reasons so that the API
// server maps them to HTTP in exactly one place.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vkube {

enum class Code {
  kOk = 0,
  kNotFound,         // 404 NotFound
  kAlreadyExists,    // 409 AlreadyExists
  kConflict,         // 409 Conflict (a precondition on the revision failed)
  kInvalid,          // 422 Invalid
  kBadRequest,       // 400 BadRequest
  kMethodNotAllowed,       // 405 MethodNotAllowed
  kNotAcceptable,          // 406 NotAcceptable
  kUnsupportedMediaType,   // 415 UnsupportedMediaType
  kUnauthorized,     // 401
  kForbidden,        // 403
  kExpired,          // 410 Gone: revision compacted, or a watcher that must re-list
  kTooLarge,         // 413 RequestEntityTooLarge
  kTooManyRequests,  // 429
  kFutureRevision,   // 504 with cause ResourceVersionTooLarge: revision not reached yet
  kTimeout,          // 504 Timeout
  kUnavailable,      // 503: the store is closed, locked or failed
  kCancelled,        // the caller (or shutdown) ended the operation
  kCorruption,       // stored data could not be decoded
  kInternal,         // 500: a bug or an I/O failure
};

// Name of a code, e.g. "NotFound", as used in logs and Kubernetes reasons.
std::string_view code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status not_found(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status already_exists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  static Status invalid(std::string m) { return {Code::kInvalid, std::move(m)}; }
  static Status bad_request(std::string m) { return {Code::kBadRequest, std::move(m)}; }
  static Status expired(std::string m) { return {Code::kExpired, std::move(m)}; }
  static Status too_large(std::string m) { return {Code::kTooLarge, std::move(m)}; }
  static Status unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
  static Status corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: key /a not found" (or "OK").
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. Accessing value() of an error is a bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok() && "Result built from an OK status carries no value");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace vkube

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define VKUBE_RETURN_IF_ERROR(expr)             \
  do {                                          \
    ::vkube::Status vkube_status_ = (expr);     \
    if (!vkube_status_.is_ok()) return vkube_status_; \
  } while (0)
