// Typed errors of the C++ API. Every message names what is wrong and the rule it breaks.
#pragma once
#include <stdexcept>
#include <string>

namespace tilepick {

enum class Status : int {
  ok = 0,
  parse_error = 1,      // a string (problem, config, expression, JSON) does not follow its grammar
  invalid_problem = 2,  // well-formed but violates a rule (C % G != 0, empty output, overflow)
  unsupported = 3,      // valid but outside what tilepick implements
  not_found = 4,        // a file, arch, space or kernel that does not exist
  io_error = 5,
  cuda_error = 6,
  internal = 7,
  invalid_argument = 8,  // a call's argument is wrong: tensor dtype/shape/strides/device, option value
};

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

// Thrown while parsing: `token` is the offending token (may be empty at end of input).
class ParseError : public Error {
 public:
  ParseError(const std::string& token, const std::string& msg)
      : Error(Status::parse_error, msg), token_(token) {}
  const std::string& token() const noexcept { return token_; }

 private:
  std::string token_;
};

class InvalidProblem : public Error {
 public:
  explicit InvalidProblem(const std::string& msg) : Error(Status::invalid_problem, msg) {}
};

class Unsupported : public Error {
 public:
  explicit Unsupported(const std::string& msg) : Error(Status::unsupported, msg) {}
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& msg) : Error(Status::invalid_argument, msg) {}
};

class NotFound : public Error {
 public:
  explicit NotFound(const std::string& msg) : Error(Status::not_found, msg) {}
};

}  // namespace tilepick
