// The engine's log in Python: on stderr (as the command line's), warnings and errors only by
// default, so that a script's own output stays its own; set_log_level changes the level.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>

#include "bindings.hpp"

namespace nb = nanobind;

namespace imflow::python {

void bind_logging(nb::module_& module) {
  auto logger = spdlog::get("imflow");
  if (!logger) logger = spdlog::stderr_color_mt("imflow");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("imflow %l: %v");
  spdlog::set_level(spdlog::level::warn);
  module.def(
      "set_log_level",
      [](const std::string& level) {
        const spdlog::level::level_enum value = spdlog::level::from_str(level);
        if (value == spdlog::level::off && level != "off") {
          throw std::invalid_argument("set_log_level: '" + level + "' is not one of debug, info, warning, error, off");
        }
        spdlog::set_level(value);
      },
      nb::arg("level"));
}

}  // namespace imflow::python
