// libFuzzer target: parse_pipeline on arbitrary text (errors must be ConfigError, never a crash).
#include <cstddef>
#include <cstdint>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const imflow::Pipeline pipeline = imflow::parse_pipeline(text, "fuzz.yaml");
    (void)pipeline.resolved();
  } catch (const imflow::ConfigError&) {
  }
  return 0;
}
