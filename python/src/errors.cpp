// imflow's exceptions as Python exceptions: ConfigError and InputError (ValueError), OutputError (OSError).
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "imflow/errors.hpp"

namespace nb = nanobind;

namespace imflow::python {

void bind_errors(nb::module_& module) {
  // what() names the file and the reason (the YAML position for a pipeline); the messages pass as they are.
  nb::exception<ConfigError>(module, "ConfigError", PyExc_ValueError);
  nb::exception<InputError>(module, "InputError", PyExc_ValueError);
  nb::exception<OutputError>(module, "OutputError", PyExc_OSError);
}

}  // namespace imflow::python
