// Status and Expected<T>: the library's error model. Library code never throws and never exits;
// apps/ turns a Status into a one-line message and an exit code (see docs/DESIGN.md).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ptq {

// Exit codes follow the CLI contract: 1 runtime failure, 2 usage error, 3 invalid input.
enum class StatusCode : int {
  kOk = 0,
  kRuntime = 1,
  kUsage = 2,
  kInvalidInput = 3,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Exit code for the command line.
  int exit_code() const { return static_cast<int>(code_); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status invalid_input(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kInvalidInput, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status runtime_error(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kRuntime, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status usage_error(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kUsage, fmt::format(f, std::forward<Args>(args)...)};
}

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok());
  }

  bool has_value() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const {
    static const Status kOk;
    return has_value() ? kOk : std::get<Status>(v_);
  }
  Status take_status() && { return has_value() ? Status{} : std::get<Status>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ptq

#define PTQ_CONCAT_INNER(a, b) a##b
#define PTQ_CONCAT(a, b) PTQ_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not ok.
#define PTQ_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::ptq::Status ptq_status_ = (expr);        \
    if (!ptq_status_.is_ok()) return ptq_status_; \
  } while (0)

// `PTQ_ASSIGN_OR_RETURN(auto x, f());` binds the value of an Expected or returns its Status.
#define PTQ_ASSIGN_OR_RETURN(lhs, expr) \
  PTQ_ASSIGN_OR_RETURN_IMPL(PTQ_CONCAT(ptq_expected_, __LINE__), lhs, expr)
#define PTQ_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.has_value()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
