// Exception types: configuration errors carry the YAML position, input errors the file.
#pragma once
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace imflow {

// A pipeline file (or command-line option) that is invalid. what() reads
// "FILE:LINE:COL: KEY: reason".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An input file that cannot be read or decoded; what() names the file and the reason.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An output that cannot be written.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "PATH: write failed: <strerror(error)>": what an output whose bytes could not be written throws.
inline OutputError write_failed(const std::filesystem::path& path, int error) {
  return OutputError(path.string() + ": write failed: " + std::strerror(error));
}

}  // namespace imflow
