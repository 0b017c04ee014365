// Reading an item's weight map into variances, its mask and its flag map, and the flag map's
// catalog columns (companion_inputs.hpp).
#include "companion_inputs.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "imflow/errors.hpp"
#include "imflow/io/companion.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/kernels/image_flags.hpp"

namespace imflow {

namespace {
constexpr float kBig = 1e30f;  // SExtractor's BIG: the variance of a pixel of no weight

// The bad-pixel threshold in variance units, as SExtractor converts WEIGHT_THRESH (weight_to_var
// before any rescaling).
float variance_threshold(const WeightConfig& weight) {
  switch (weight.type) {
    case WeightType::map_rms: {
      const auto rms = static_cast<float>(weight.thresh.value_or(kBig));
      return rms < kBig ? rms * rms : kBig;
    }
    case WeightType::map_var: return static_cast<float>(weight.thresh.value_or(kBig));
    case WeightType::map_weight: {
      const auto w = static_cast<float>(weight.thresh.value_or(0.0));
      return w > 0.0f ? 1.0f / w : kBig;
    }
  }
  return kBig;
}
}  // namespace

int64_t read_weight_map(const ItemRef& ref, const WeightConfig& weight, ImageBuffer& image, std::vector<float>& variances,
                        const ReadLimits& limits) {
  ImageBuffer map;
  read_companion(ref, weight.map, image.width(), image.height(), map, limits);
  const int64_t n = map.size();
  const float threshold = variance_threshold(weight);
  const float* values = map.data();
  float* pixels = image.data();
  variances.resize(static_cast<size_t>(n));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    float variance = kBig;
    bool usable = std::isfinite(v);
    switch (weight.type) {
      case WeightType::map_rms:
        usable = usable && v >= 0.0f;
        variance = v < kBig ? v * v : kBig;
        break;
      case WeightType::map_var:
        usable = usable && v >= 0.0f;
        variance = v;
        break;
      case WeightType::map_weight:
        variance = v > 0.0f ? 1.0f / v : kBig;
        break;
    }
    if (!usable || variance >= threshold) {
      variances[i] = std::numeric_limits<float>::infinity();
      pixels[i] = std::numeric_limits<float>::quiet_NaN();
      ++bad;
    } else {
      variances[i] = variance;
    }
  }
  return bad;
}

void apply_mask(const CompanionSpec& mask, double threshold, WorkItem& item, const ReadLimits& limits) {
  ImageBuffer map;
  read_companion(item.ref, mask, item.pixels.width(), item.pixels.height(), map, limits);
  const float* values = map.data();
  float* pixels = item.pixels.data();
  int64_t masked = 0;
  float* detection = item.dual_image ? item.detection.data() : nullptr;  // masked in both images
  for (int64_t i = 0; i < map.size(); ++i) {
    if (std::isfinite(values[i]) && !(static_cast<double>(values[i]) > threshold)) continue;
    pixels[i] = std::numeric_limits<float>::quiet_NaN();
    if (detection != nullptr) detection[i] = std::numeric_limits<float>::quiet_NaN();
    ++masked;
  }
  item.metrics["masked_pixels"] = static_cast<double>(masked);
}

void read_flag_map(const CompanionSpec& flags, kernels::FlagType type, WorkItem& item, const ReadLimits& limits) {
  item.flag_type = type;
  ImageBuffer map;
  read_companion(item.ref, flags, item.pixels.width(), item.pixels.height(), map, limits);  // its checks and errors
  item.flag_map.resize(static_cast<size_t>(map.size()));
  const CompanionPlace place = locate_companion(item.ref, flags);
  if (is_fits_input(place.path)) {
    // Read again as integers, exact beyond float32's 2^24, and kept as 32 unsigned bits, as
    // SExtractor's FLAGTYPE (a negative int16 -1 is 0xffffffff).
    std::vector<int64_t> values;
    try {
      values = read_fits_integer_plane(place.path, place.hdu, place.plane, map.size());
    } catch (const InputError& error) {
      throw InputError(item.ref.path.string() + ": its " + flags.role + ": " + error.what());
    }
    for (size_t i = 0; i < values.size(); ++i) item.flag_map[i] = static_cast<int32_t>(static_cast<uint32_t>(values[i]));
    return;
  }
  const float* values = map.data();  // PNG and NIfTI flag maps: integers of at most 16 bits
  for (int64_t i = 0; i < map.size(); ++i) {
    item.flag_map[static_cast<size_t>(i)] = std::isfinite(values[i]) ? static_cast<int32_t>(static_cast<int64_t>(values[i])) : 0;
  }
}

void catalog_flag_map(WorkItem& item) {
  if (item.flag_map.empty() || !item.catalog) return;
  if (item.labels.size() != item.flag_map.size())
    throw std::runtime_error("the flag map's columns need the label map, which this item lacks");
  kernels::image_flags(item.labels.data(), item.flag_map.data(), static_cast<int64_t>(item.flag_map.size()), item.flag_type,
                       *item.catalog);
  if (!item.photometry) item.photometry.emplace();
  item.photometry->flag_map = true;
}

void read_companions(const InputConfig& input, WorkItem& item, const ReadLimits& limits) {
  if (input.detect.present()) {  // dual-image mode: the detection image, of the same size
    read_companion(item.ref, input.detect, item.pixels.width(), item.pixels.height(), item.detection, limits);
    item.dual_image = true;
  }
  if (input.flags.present()) read_flag_map(input.flags, input.flag_type, item, limits);
  if (input.mask.present()) apply_mask(input.mask, input.mask_thresh, item, limits);
  if (input.weight.present()) {
    const int64_t bad = read_weight_map(item.ref, input.weight, item.pixels, item.weight_variance, limits);
    item.weight_rescale = input.weight.rescale;
    item.weight_gain = input.weight.gain;
    item.metrics["weight_bad_pixels"] = static_cast<double>(bad);
  }
  if (item.dual_image && input.detect_weight.present()) {
    const int64_t bad = read_weight_map(item.ref, input.detect_weight, item.detection, item.detection_weight_variance, limits);
    item.detection_weight_rescale = input.detect_weight.rescale;
    item.metrics["detect_weight_bad_pixels"] = static_cast<double>(bad);
  }
}

}  // namespace imflow
