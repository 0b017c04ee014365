// The tiling section and plan: which pipelines can run on tiles (docs/tiling.md) and their halo.
#include "imflow/tiling.hpp"

#include <algorithm>

#include "imflow/errors.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/params.hpp"
#include "steps/measure_photometry.hpp"

namespace imflow {

namespace {
// Kernel width and height of a convolve step, from its resolved parameters.
std::pair<int64_t, int64_t> convolve_kernel_size(const YAML::Node& params) {
  const YAML::Node kernel = params["kernel"];
  if (kernel.IsDefined() && kernel.IsSequence()) {
    const int64_t height = static_cast<int64_t>(kernel.size());
    return {height > 0 ? static_cast<int64_t>(kernel[0].size()) : 0, height};
  }
  if (kernel.IsDefined() && kernel.IsScalar() && kernel.Scalar() == "lesson") return {15, 15};
  const int64_t size = params["size"].IsDefined() ? params["size"].as<int64_t>() : 5;
  return {size, size};
}

// Why a step cannot run on tiles, or "" when it can.
std::string untileable_step(const Step& step) {
  const std::string& name = step.name();
  const YAML::Node& params = step.params();
  if (name == "convolve") {
    return step.param_text("mode", "same") == "same" ? "" : "convolve with mode: full changes the image size";
  }
  if (name == "background") {
    const std::string method = step.param_text("method", "global");
    return method == "global" ? "" : "background method: " + method + " is not supported on tiles yet (use method: global)";
  }
  if (name == "segment") {
    const std::string relative = step.param_text("relative_to", "background");
    return relative == "background" || relative == "zero" ? "" : "segment relative_to: " + relative + " needs per-pixel maps";
  }
  if (name == "measure" && PhotometrySetting::requested(params)) {  // apertures reach past a tile's halo
    return "measure's photometry (auto, apertures, flux_radius, windowed, zeropoint) reads pixels around each "
           "source, which may lie in other tiles";
  }
  if (name == "label" && std::stoll(step.param_text("minarea", "1")) > 1) {
    return "label's minarea counts a segment's pixels, which may lie in other tiles";
  }
  if (name == "label" || name == "measure") return "";
  if (name == "deblend") {  // a segment crossing a tile border must be split once, whole
    return "deblend splits each segment as a whole, and segments may cross tile borders";
  }
  return "step '" + name + "' works on whole images only";
}
}  // namespace

TilingConfig parse_tiling(ParamReader& reader) {
  TilingConfig tiling;
  tiling.explicit_size = reader.has("size");
  tiling.size = reader.integer("size", tiling.size, 0, int64_t{1} << 30);
  if (tiling.size != 0 && tiling.size < 8) reader.fail(reader.child("size"), "size", "must be 0 (no tiling) or at least 8");
  const YAML::Node halo = reader.child("halo");
  if (halo.IsDefined() && !(halo.IsScalar() && halo.Scalar() == "auto")) {
    int64_t value = -1;
    if (!halo.IsScalar() || !YAML::convert<int64_t>::decode(halo, value) || value < 0 || value > (int64_t{1} << 20)) {
      reader.fail(halo, "halo", "expected auto or a number of pixels >= 0");
    }
    tiling.halo = value;
  }
  const YAML::Node resident = reader.child("resident");
  if (resident.IsDefined()) {
    // YAML 1.1 reads a bare `off` as false; accept both spellings.
    const std::string text = resident.IsScalar() ? resident.Scalar() : "";
    if (text == "auto" || text == "true" || text == "on") tiling.resident = true;
    else if (text == "off" || text == "false") tiling.resident = false;
    else reader.fail(resident, "resident", "expected auto or off");
  }
  reader.finish();
  return tiling;
}

TileRect TileGrid::core(int64_t index) const {
  const int64_t column = index % columns(), row = index / columns();
  const int64_t x = column * size, y = row * size;
  return {x, y, std::min(size, width - x), std::min(size, height - y)};
}

int64_t convolution_reach(const Pipeline& pipeline) {
  int64_t reach = 0;
  for (const auto& step : pipeline.steps) {
    if (step->name() != "convolve") continue;
    const auto [kw, kh] = convolve_kernel_size(step->params());
    reach += std::max(kw / 2, kh / 2);
  }
  return reach;
}

int64_t required_halo(const Pipeline& pipeline) {
  const bool measure = std::any_of(pipeline.steps.begin(), pipeline.steps.end(),
                                   [](const auto& step) { return step->name() == "measure"; });
  return convolution_reach(pipeline) + (measure ? 1 : 0);
}

// Whether a GPU-resident image may be used (outputs catalogs only, tiling.resident auto), and the
// GPU memory its steps need per pixel: 48 bytes (image, sort keys and CUB's work, mask, labels
// and the label work array, measure's segment list, a detection image), deblending's pixel lists
// and work arrays 64 more, the mesh background's two full-size maps 16, measure's photometry (the
// background-subtracted image and its mask) 8.
void plan_resident(const Pipeline& pipeline, TilingPlan& plan) {
  const TilingConfig& config = pipeline.tiling;
  plan.resident = config.resident;
  for (const auto& format : pipeline.output.formats) {
    if (format != "csv" && format != "fits" && format != "ldac" && plan.resident) {
      plan.resident = false;  // an image output of a resident image would need the whole image on the host
      plan.resident_off_reason = "output format '" + format + "' is written tile by tile";
    }
  }
  if (!config.resident) plan.resident_off_reason = "tiling.resident: off";
  if (pipeline.input.has_companions()) {  // read beside the image on the host (companion_inputs.hpp)
    plan.resident = false;
    plan.resident_off_reason = "a weight map, mask, flag map or detection image is read on the host";
  }
  for (const auto& step : pipeline.steps) {
    if (step->name() == "deblend") plan.resident_bytes_per_pixel += 64;
    if (step->name() == "background" && step->param_text("method", "global") == "mesh")
      plan.resident_bytes_per_pixel += 16;
    if (step->name() == "measure" && PhotometrySetting::requested(step->params())) plan.resident_bytes_per_pixel += 8;
  }
}

TilingPlan plan_tiling(const Pipeline& pipeline) {
  const TilingConfig& config = pipeline.tiling;
  TilingPlan plan;
  if (config.size == 0) return plan;
  std::string reason;
  for (const auto& step : pipeline.steps) {
    if (std::string why = untileable_step(*step); !why.empty() && reason.empty()) reason = why;
    if (step->name() == "label") plan.connectivity = std::stoi(step->param_text("connectivity", "4"));
    if (step->name() == "background") {
      plan.has_background = true;
      plan.kappa = std::stod(step->param_text("kappa", "3"));
      plan.max_iters = std::stoi(step->param_text("max_iters", "100"));
    }
  }
  if (pipeline.input.has_companions() && reason.empty()) reason = "a weight map, mask, flag map or detection image (input.weight, input.mask, input.flags, input.detect) is read for whole images only";
  for (const auto& format : pipeline.output.formats) {
    if ((format == "png" || format == "metrics") && reason.empty()) reason = "output format '" + format + "' works on whole images only";
  }
  const int64_t reach = required_halo(pipeline);
  if (config.halo >= 0 && config.halo < reach) {
    throw ConfigError("tiling.halo: " + std::to_string(config.halo) + " is smaller than the " + std::to_string(reach) +
                      " pixels this pipeline needs around a tile: tiles would not match the whole image (use halo: auto)");
  }
  if (!reason.empty()) {
    if (config.explicit_size) {
      throw ConfigError("tiling: this pipeline cannot run on tiles: " + reason +
                        " (set tiling: {size: 0} or --tile 0 to process whole images; docs/tiling.md)");
    }
    plan.off_reason = reason;
    plan.whole_above = config.size;
    plan_resident(pipeline, plan);  // whole, but on the GPU still read in strips when it fits there
    return plan;
  }
  plan.size = config.size;
  plan.halo = config.halo >= 0 ? config.halo : reach;  // reach: required_halo()
  plan_resident(pipeline, plan);
  return plan;
}

bool file_reads_by_tiles(const std::filesystem::path& path) {
  const InputFormat* format = input_format_for(path);
  return format != nullptr && std::string(format->name) == "fits" && !whole_file_compressed(path);
}

}  // namespace imflow
