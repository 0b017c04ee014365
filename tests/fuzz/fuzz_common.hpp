// Shared by the libFuzzer targets: the readers take paths, so each input is written to a
// per-process temporary file with the format's extension and read back through the real API.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace imflow::fuzz {

inline std::filesystem::path input_file(const char* extension, const uint8_t* data, size_t size) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("imflow-fuzz-" + std::to_string(::getpid()) + extension);
  if (FILE* file = std::fopen(path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, file);
    std::fclose(file);
  }
  return path;
}

}  // namespace imflow::fuzz
