// The one exception type of the core. `code` is the stable ERR_* string the TS layer
// turns into a NativeError; the binding never inspects `what()`.
#pragma once

#include <stdexcept>
#include <string>

namespace ec {

class NativeException : public std::runtime_error {
 public:
  NativeException(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

}  // namespace ec
