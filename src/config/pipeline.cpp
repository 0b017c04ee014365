// Pipeline YAML parsing and validation.
#include "imflow/pipeline.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "imflow/errors.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"
#include "imflow/tiling.hpp"
#include "input_companions.hpp"

namespace imflow {

namespace {
const std::vector<std::string> kOutputFormats = {"csv", "fits", "ldac", "labels", "bgsub", "png", "fits_image", "metrics"};

InputConfig parse_input(ParamReader reader) {
  InputConfig input;
  input.dir = reader.text("dir", "");
  input.patterns = reader.text_list("patterns", default_input_patterns());
  input.recursive = reader.boolean("recursive", false);
  input.max_pixels = reader.integer("max_pixels", input.max_pixels, 1);
  input.max_file_bytes = reader.integer("max_file_bytes", input.max_file_bytes, 1);
  input.extnames = reader.text_list("extnames", {});
  input.nifti_axis = static_cast<int>(reader.integer("nifti_axis", 2, 0, 2));
  input.nifti_cache_mb = reader.integer("nifti_cache_mb", input.nifti_cache_mb, 0, int64_t{1} << 30);
  input.weight = parse_weight(reader);
  parse_mask(reader, input);
  parse_flags(reader, input);
  parse_detect(reader, input);
  reader.finish();
  return input;
}

OutputConfig parse_output(ParamReader reader, const YAML::Node& node) {
  OutputConfig output;
  output.dir = reader.text("dir", "imflow-out");
  output.formats = reader.text_list("formats", {"csv", "fits"});
  output.manifest_sync = reader.boolean("manifest_sync", false);
  output.fsync = reader.boolean("fsync", false);
  output.png_compression = static_cast<int>(reader.integer("png_compression", 1, 0, 9));
  output.merged_catalog = reader.boolean("merged_catalog", true);
  for (const auto& format : output.formats) {
    if (std::find(kOutputFormats.begin(), kOutputFormats.end(), format) == kOutputFormats.end()) {
      std::string known;
      for (const auto& name : kOutputFormats) known += (known.empty() ? "" : ", ") + name;
      reader.fail(node["formats"], "formats", "unknown format '" + format + "' (known: " + known + ")");
    }
  }
  reader.finish();
  return output;
}

EngineConfig parse_engine(ParamReader& reader) {
  EngineConfig engine;
  engine.device = reader.choice("device", "auto", {"auto", "cpu", "cuda"});
  engine.threads = static_cast<int>(reader.integer("threads", 0, 0, 4096));
  engine.buffers = static_cast<int>(reader.integer("buffers", 0, 0, 4096));
  const YAML::Node devices = reader.child("devices");
  if (devices.IsDefined() && devices.IsSequence()) {
    for (const auto& device : devices) {
      int id = -1;
      if (!device.IsScalar() || !YAML::convert<int>::decode(device, id) || id < 0) {
        reader.fail(device, "devices", "expected 'all' or a list of device numbers >= 0");
      }
      engine.devices.push_back(id);
    }
  } else if (devices.IsDefined() && !(devices.IsScalar() && devices.Scalar() == "all")) {
    reader.fail(devices, "devices", "expected 'all' or a list of device numbers >= 0");
  }
  engine.streams = static_cast<int>(reader.integer("streams", 4, 1, 64));
  engine.buffers_per_stream = static_cast<int>(reader.integer("buffers_per_stream", 0, 0, kMaxBuffersPerStream));
  engine.batch = static_cast<int>(reader.integer("batch", 0, 0, 4096));
  engine.memory_mb = reader.integer("memory_mb", 1024, 16, int64_t{1} << 30);
  engine.fail_fast = reader.boolean("fail_fast", false);
  return engine;
}

// A steps entry is either "name" or {name: {params}} (a map with exactly one key).
std::unique_ptr<Step> parse_step(const YAML::Node& entry, size_t index, const std::string& file) {
  const std::string where = "steps[" + std::to_string(index) + "]";
  std::string name;
  YAML::Node params;
  if (entry.IsScalar()) {
    name = entry.Scalar();
  } else if (entry.IsMap() && entry.size() == 1) {
    name = entry.begin()->first.Scalar();
    params = entry.begin()->second;
  } else {
    throw ConfigError(yaml_location(file, entry) + where + ": expected a step name or {name: {parameters}}");
  }
  if (find_step(name) == nullptr) {
    std::string known;
    for (const auto& info : step_registry()) known += (known.empty() ? "" : ", ") + std::string(info.name);
    throw ConfigError(yaml_location(file, entry) + where + ": unknown step '" + name + "' (known: " + known + ")");
  }
  ParamReader reader(params.IsDefined() ? params : YAML::Node(YAML::NodeType::Map), where + "." + name, file, entry);
  return make_step(name, reader);
}

// Each step's needs must be provided by an earlier step, and its link() accept the steps before it.
// The detection's products are made once: a second background, segment, label or measure would
// replace the first's (deblend, which needs the labels it provides, refines them). Image steps
// (normalize composes) may repeat.
void check_step_order(const std::vector<std::unique_ptr<Step>>& steps, const YAML::Node& list, const std::string& file) {
  std::vector<std::pair<std::string, size_t>> provided;  // product, the step that made it
  const auto maker = [&](const std::string& product) {
    return std::find_if(provided.begin(), provided.end(), [&](const auto& made) { return made.first == product; });
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepInfo* info = find_step(steps[i]->name());
    const std::string where = yaml_location(file, list[i]) + "steps[" + std::to_string(i) + "]." + steps[i]->name();
    for (const auto& need : info->needs) {
      if (maker(need) == provided.end()) throw ConfigError(where + ": needs '" + need + "', which no earlier step provides");
    }
    for (const auto& product : info->provides) {
      const auto made = maker(product);
      const bool made_once = product == "background" || product == "mask" || product == "labels" || product == "catalog";
      if (made == provided.end()) {
        provided.emplace_back(product, i);
      } else if (made_once && std::find(info->needs.begin(), info->needs.end(), product) == info->needs.end()) {
        throw ConfigError(where + ": the " + product + " is already made by steps[" + std::to_string(made->second) + "]." +
                          steps[made->second]->name() + " (a step that makes it is given once)");
      }
    }
    std::vector<const Step*> earlier;
    for (size_t j = 0; j < i; ++j) earlier.push_back(steps[j].get());
    if (const std::string why = steps[i]->link(earlier); !why.empty()) {
      throw ConfigError(yaml_location(file, list[i]) + "steps[" + std::to_string(i) + "]." + steps[i]->name() + ": " + why);
    }
  }
}
// YAML forbids a key twice in one map; yaml-cpp would keep the first silently (PyYAML the last).
void check_unique_keys(const YAML::Node& node, const std::string& source_name) {
  if (node.IsSequence()) {
    for (const YAML::Node& element : node) check_unique_keys(element, source_name);
    return;
  }
  if (!node.IsMap()) return;
  std::set<std::string> keys;
  for (const auto& entry : node) {
    if (entry.first.IsScalar() && !keys.insert(entry.first.Scalar()).second) {
      throw ConfigError(yaml_location(source_name, entry.first) + entry.first.Scalar() + ": given twice in the same map");
    }
    check_unique_keys(entry.second, source_name);
  }
}

// Catalog formats asked for with no step that makes a catalog, or no format at all: only the
// summary and the manifest would be written. A warning: the pipeline runs.
void warn_about_formats(const Pipeline& pipeline, const YAML::Node& formats, const std::string& source_name) {
  if (!formats.IsDefined()) return;
  if (pipeline.output.formats.empty()) {
    spdlog::warn("{}output.formats: none given; only summary.json and manifest.jsonl are written",
                 yaml_location(source_name, formats));
    return;
  }
  if (!pipeline.output.wants_catalog_files()) return;
  for (const auto& step : pipeline.steps) {
    const StepInfo* info = find_step(step->name());
    if (info != nullptr && std::find(info->provides.begin(), info->provides.end(), "catalog") != info->provides.end()) return;
  }
  spdlog::warn("{}output.formats: catalogs (csv, fits, ldac) asked for, but no step makes one (measure): none is written",
               yaml_location(source_name, formats));
}

}  // namespace

bool OutputConfig::wants(const std::string& format) const {
  return std::find(formats.begin(), formats.end(), format) != formats.end();
}

bool OutputConfig::wants_catalog_files() const { return wants("csv") || wants("fits") || wants("ldac"); }

bool OutputConfig::wants_merged_catalog() const { return wants("csv") && merged_catalog; }

std::vector<int> parse_device_list(const std::string& text) {
  if (text == "all") return {};
  std::vector<int> devices;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    try {
      size_t used = 0;
      const int id = std::stoi(part, &used);
      if (used != part.size() || id < 0) throw std::invalid_argument(part);
      devices.push_back(id);
    } catch (const std::exception&) {
      throw ConfigError("--devices: '" + text + "' is not 'all' or a comma-separated list of device numbers");
    }
  }
  if (devices.empty()) throw ConfigError("--devices: empty list");
  return devices;
}

void validate_engine(const EngineConfig& engine) {
  if (engine.device != "auto" && engine.device != "cpu" && engine.device != "cuda") {
    throw ConfigError("device: '" + engine.device + "' is not one of: auto, cpu, cuda");
  }
  if (engine.threads < 0 || engine.buffers < 0 || engine.streams < 1 || engine.buffers_per_stream < 0) {
    throw ConfigError("threads, buffers and buffers_per_stream must be >= 0, streams >= 1");
  }
}

Pipeline parse_pipeline(const std::string& yaml_text, const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& error) {
    throw ConfigError(source_name + ":" + std::to_string(error.mark.line + 1) + ":" +
                      std::to_string(error.mark.column + 1) + ": YAML syntax error: " + error.msg);
  }
  if (!root.IsMap()) throw ConfigError(source_name + ": the pipeline must be a YAML map (input, output, steps, ...)");
  check_unique_keys(root, source_name);
  Pipeline pipeline;
  pipeline.source = source_name;
  ParamReader top(root, "", source_name);
  pipeline.input = parse_input(ParamReader(top.child("input"), "input", source_name));
  pipeline.output = parse_output(ParamReader(top.child("output"), "output", source_name), root["output"]);
  pipeline.engine = parse_engine(top);
  {
    ParamReader tiling(top.child("tiling"), "tiling", source_name);
    pipeline.tiling = parse_tiling(tiling);
  }
  const YAML::Node steps = top.child("steps");
  if (!steps.IsDefined() || !steps.IsSequence() || steps.size() == 0) {
    top.fail(steps, "steps", "expected a non-empty list of steps");
  }
  for (size_t i = 0; i < steps.size(); ++i) pipeline.steps.push_back(parse_step(steps[i], i, source_name));
  check_step_order(pipeline.steps, steps, source_name);
  warn_about_formats(pipeline, root["output"]["formats"], source_name);
  check_companions(pipeline, root);
  try {
    plan_tiling(pipeline);
  } catch (const ConfigError& error) {
    throw ConfigError(yaml_location(source_name, root["tiling"]) + error.what());
  }
  top.finish();
  return pipeline;
}

Pipeline load_pipeline(const std::filesystem::path& file) {
  std::ifstream stream(file);
  if (!stream) throw ConfigError(file.string() + ": cannot open the pipeline file");
  std::ostringstream text;
  text << stream.rdbuf();
  return parse_pipeline(text.str(), file.string());
}

YAML::Node Pipeline::resolved() const {
  YAML::Node root;
  root["input"]["dir"] = input.dir.string();
  root["input"]["patterns"] = input.patterns;
  root["input"]["recursive"] = input.recursive;
  root["input"]["max_pixels"] = input.max_pixels;
  root["input"]["max_file_bytes"] = input.max_file_bytes;
  root["input"]["extnames"] = input.extnames;
  root["input"]["nifti_axis"] = input.nifti_axis;
  root["input"]["nifti_cache_mb"] = input.nifti_cache_mb;
  resolve_companions(input, root["input"]);
  root["output"]["dir"] = output.dir.string();
  root["output"]["formats"] = output.formats;
  root["output"]["manifest_sync"] = output.manifest_sync;
  root["output"]["fsync"] = output.fsync;
  root["output"]["png_compression"] = output.png_compression;
  root["output"]["merged_catalog"] = output.merged_catalog;
  root["device"] = engine.device;
  root["threads"] = engine.threads;
  root["buffers"] = engine.buffers;
  if (engine.devices.empty()) {
    root["devices"] = "all";
  } else {
    root["devices"] = engine.devices;
  }
  root["streams"] = engine.streams;
  root["buffers_per_stream"] = engine.buffers_per_stream;
  root["memory_mb"] = engine.memory_mb;
  root["batch"] = engine.batch;
  root["fail_fast"] = engine.fail_fast;
  // A pipeline that cannot run on tiles keeps its default size, which it refuses when given:
  // left out, so that what `imflow validate` prints loads again.
  if (tiling.explicit_size || plan_tiling(*this).off_reason.empty()) root["tiling"]["size"] = tiling.size;
  if (tiling.halo < 0) {
    root["tiling"]["halo"] = "auto";
  } else {
    root["tiling"]["halo"] = tiling.halo;
  }
  root["tiling"]["resident"] = tiling.resident ? "auto" : "off";
  for (const auto& step : steps) {
    YAML::Node entry;
    entry[step->name()] = step->params();
    root["steps"].push_back(entry);
  }
  return root;
}

}  // namespace imflow
