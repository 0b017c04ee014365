// imflow.run: a pipeline (YAML text) over a directory with run_pipeline, the run summary as JSON text;
// RunCounts lets another Python thread follow it (the progress bar) and stop it (KeyboardInterrupt).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "imflow/engine.hpp"
#include "imflow/pipeline.hpp"

namespace nb = nanobind;

namespace imflow::python {

namespace {
// The engine settings imflow.run takes as keyword arguments (imflow run's command-line options).
struct RunSettings {
  std::string input, output, device, trace, summary;
  int threads = -1, buffers = -1, batch = -1;
  bool fail_fast = false, resume = false;
};

std::string run(const std::string& yaml_text, const std::string& source_name, const RunSettings& s, RunCounts* counts) {
  Pipeline pipeline = parse_pipeline(yaml_text, source_name);
  if (!s.input.empty()) pipeline.input.dir = s.input;
  if (!s.output.empty()) pipeline.output.dir = s.output;
  if (!s.device.empty()) pipeline.engine.device = s.device;
  if (s.threads >= 0) pipeline.engine.threads = s.threads;
  if (s.buffers >= 0) pipeline.engine.buffers = s.buffers;
  if (s.batch >= 0) pipeline.engine.batch = s.batch;
  if (s.fail_fast) pipeline.engine.fail_fast = true;
  validate_engine(pipeline.engine);
  RunOptions options;
  options.trace_path = s.trace;
  options.summary_path = s.summary;
  options.resume = s.resume;
  options.counts = counts;
  nb::gil_scoped_release unlocked;
  const RunSummary summary = run_pipeline(pipeline, options);
  return summary.to_json().dump();
}
}  // namespace

void bind_run(nb::module_& module) {
  nb::class_<RunSettings>(module, "RunSettings")
      .def(nb::init<>())
      .def_rw("input", &RunSettings::input)
      .def_rw("output", &RunSettings::output)
      .def_rw("device", &RunSettings::device)
      .def_rw("trace", &RunSettings::trace)
      .def_rw("summary", &RunSettings::summary)
      .def_rw("threads", &RunSettings::threads)
      .def_rw("buffers", &RunSettings::buffers)
      .def_rw("batch", &RunSettings::batch)
      .def_rw("fail_fast", &RunSettings::fail_fast)
      .def_rw("resume", &RunSettings::resume);
  nb::class_<RunCounts>(module, "RunCounts", "What a run has done so far, readable while it runs in another thread.")
      .def(nb::init<>())
      .def_prop_ro("files", [](const RunCounts& c) { return c.files.load(); }, "input files (-1 until listed)")
      .def_prop_ro("files_done", [](const RunCounts& c) { return c.files_done.load(); })
      .def_prop_ro("items_done", [](const RunCounts& c) { return c.items_done.load(); })
      .def_prop_ro("items_failed", [](const RunCounts& c) { return c.items_failed.load(); })
      .def("stop", [](RunCounts& c) { c.stop = true; }, "Take no new items; those in flight are finished.");
  module.def("run", &run, nb::arg("yaml_text"), nb::arg("source_name"), nb::arg("settings"),
             nb::arg("counts").none() = nb::none(),
             "Run a pipeline (YAML text; source_name names it in messages): the run summary as JSON text.");
}

}  // namespace imflow::python
