// Errors of the whole project, the lowest layer (C++17-clean: .cu files include it too). Every
// ddpscope::Error (or a subclass) whose message says what failed, where, and what to do;
// DDPSCOPE_CHECK adds file:line.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ddpscope {

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line)
      : std::runtime_error(what + " [" + file + ":" + std::to_string(line) + "]"), message_(what) {}
  // The message without the source location, for user-facing output.
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// The words of an error for the user: ddpscope's own without the source location they
// carry for developers ("[probes/bucket_advice.cpp:484]"), others as they are.
inline std::string user_message(const std::exception& e) {
  if (const auto* ours = dynamic_cast<const Error*>(&e)) return ours->message();
  return e.what();
}

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace ddpscope

#define DDPSCOPE_ERROR(...) ::ddpscope::Error(::ddpscope::detail::concat(__VA_ARGS__), __FILE__, __LINE__)

// Throws ddpscope::Error with the streamed message when cond is false.
#define DDPSCOPE_CHECK(cond, ...)        \
  do {                                   \
    if (__builtin_expect(!(cond), 0)) {  \
      throw DDPSCOPE_ERROR(__VA_ARGS__); \
    }                                    \
  } while (0)
