// Step `convolve`: 2-D convolution with a Gaussian (size, sigma), the seed lesson's 15x15
// kernel, or an explicit kernel; `apply_to: detection` filters the image segmentation uses,
// `apply_to: image` replaces the pixels (the only choice for mode full, which grows the image);
// `arithmetic: sep` filters as sep.extract does (kernels::sep_convolve, cuda::convolve_sep). After
// the background step a detection filter reads the image less its background (FILTER Y).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "imflow/kernels/convolve.hpp"
#include "imflow/kernels/sep_filter.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/convolve.hpp"
#endif

namespace imflow {

namespace {
class ConvolveStep final : public Step {
 public:
  explicit ConvolveStep(ParamReader& params) {
    const YAML::Node kernel = params.child("kernel");
    std::string kind = "gaussian";
    if (kernel.IsDefined() && kernel.IsSequence()) {
      kind = "explicit";
      read_explicit_kernel(kernel, params);
    } else if (kernel.IsDefined()) {
      kind = kernel.IsScalar() ? kernel.Scalar() : "";
      if (kind != "gaussian" && kind != "lesson") {
        params.fail(kernel, "kernel", "expected gaussian, lesson or a list of rows of numbers");
      }
    }
    if (kind == "gaussian") {
      const int size = static_cast<int>(params.integer("size", 5, 1, 255));
      const double sigma = params.number("sigma", 1.0, 1e-6, 1e4);
      kernels::gaussian_kernel(size, sigma, kernel_);
    } else if (kind == "lesson") {
      kernels::lesson_gaussian_kernel(kernel_);
    }
    const std::string mode = params.choice("mode", "same", {"same", "full"});
    mode_ = mode == "full" ? kernels::ConvolveMode::full : kernels::ConvolveMode::same;
    to_detection_ = params.choice("apply_to", "detection", {"detection", "image"}) == "detection";
    if (mode_ == kernels::ConvolveMode::full && to_detection_) {
      params.fail(params.child("mode"), "mode", "mode full changes the image size: use apply_to: image");
    }
    sep_ = params.choice("arithmetic", "imflow", {"imflow", "sep"}) == "sep";
    if (sep_ && mode_ == kernels::ConvolveMode::full) {
      params.fail(params.child("arithmetic"), "arithmetic", "arithmetic sep filters in mode same only");
    }
    if (sep_) sep_kernel_ = kernels::sep_filter_kernel(kernel_.view());
  }

  // A detection filter placed after the background step filters the image less it.
  std::string link(const std::vector<const Step*>& earlier) override {
    after_background_ = std::any_of(earlier.begin(), earlier.end(), [](const Step* s) { return s->name() == "background"; });
    return "";
  }

  void run_cpu(WorkItem& item) const override {
    const bool subtract = subtracts_background(item);
    if (subtract && !item.background) throw std::runtime_error("convolve: the background step's results are missing");
    const ImageBuffer subtracted = subtract ? less_background(item) : ImageBuffer{};
    const ImageBuffer& source = subtract ? subtracted : item.detection_image();
    ImageBuffer result;
    result.resize(kernels::convolved_width(source.width(), kernel_.width(), mode_),
                  kernels::convolved_height(source.height(), kernel_.height(), mode_));
    if (sep_) {
      kernels::sep_convolve(source.view(), sep_kernel_, result.data());
    } else {
      kernels::convolve2d(source.view(), kernel_.view(), mode_, result.view());
    }
    if (to_detection_) {
      if (item.dual_image && item.detection_as_read.empty()) item.detection_as_read = std::move(item.detection);
      item.detection = std::move(result);
      item.detection_subtracted = item.detection_subtracted || subtract;
    } else {
      item.pixels = std::move(result);
      item.detection.resize(0, 0);
    }
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    const bool subtract = subtracts_background(item);
    if (sep_) {
      cuda::convolve_sep(gpu, sep_kernel_, to_detection_, subtract);
    } else {
      cuda::convolve(gpu, kernel_.data(), static_cast<int>(kernel_.width()), static_cast<int>(kernel_.height()), mode_,
                     to_detection_, true, subtract);
    }
    if (to_detection_) item.detection_subtracted = item.detection_subtracted || subtract;
  }
#endif

 private:
  // A detection filter after the background step filters the image less its background, as
  // SExtractor's FILTER Y and sep.extract(data - bkg, filter_kernel=...) do: the background and
  // its RMS are the unfiltered image's, and zero padding adds nothing at the borders. Not again
  // on a detection image already less its background.
  bool subtracts_background(const WorkItem& item) const {
    return to_detection_ && after_background_ && !item.detection_subtracted;
  }

  // The detection image less its background in float32 (the mesh map, or the global median).
  static ImageBuffer less_background(const WorkItem& item) {
    const ImageBuffer& image = item.detection_image();
    const int64_t n = image.size();
    const bool map = static_cast<int64_t>(item.background_map.size()) == n;
    const auto level = static_cast<float>(item.background->median);
    ImageBuffer out;
    out.resize(image.width(), image.height());
    const float* in = image.data();
    float* values = out.data();
    for (int64_t i = 0; i < n; ++i) values[i] = in[i] - (map ? item.background_map[static_cast<size_t>(i)] : level);
    return out;
  }

  void read_explicit_kernel(const YAML::Node& rows, ParamReader& params) {
    const size_t height = rows.size();
    const size_t width = height > 0 && rows[0].IsSequence() ? rows[0].size() : 0;
    if (height == 0 || width == 0) params.fail(rows, "kernel", "an explicit kernel needs at least one row and column");
    kernel_.resize(static_cast<int64_t>(width), static_cast<int64_t>(height));
    for (size_t y = 0; y < height; ++y) {
      if (!rows[y].IsSequence() || rows[y].size() != width) {
        params.fail(rows[y], "kernel", "every row of the kernel must have " + std::to_string(width) + " numbers");
      }
      for (size_t x = 0; x < width; ++x) {
        double value = 0.0;
        if (!YAML::convert<double>::decode(rows[y][x], value) || !std::isfinite(value)) {
          params.fail(rows[y][x], "kernel", "kernel values must be finite numbers");
        }
        kernel_.view()(static_cast<int64_t>(x), static_cast<int64_t>(y)) = static_cast<float>(value);
      }
    }
    // All zeros (in float32) would blank the image, and SEP's arithmetic divides by the sum of magnitudes.
    const float* values = kernel_.data();
    if (std::all_of(values, values + kernel_.size(), [](float v) { return v == 0.0f; })) {
      params.fail(rows, "kernel", "every entry is 0: the filtered image would be all zeros");
    }
  }

  ImageBuffer kernel_;
  kernels::ConvolveMode mode_;
  bool to_detection_;
  bool sep_ = false;  // SEP's arithmetic: the kernel over sum |k|, correlated, float32 sums
  bool after_background_ = false;  // placed after the background step (link)
  kernels::SepFilterKernel sep_kernel_;
};
}  // namespace

std::unique_ptr<Step> make_convolve_step(ParamReader& params) { return std::make_unique<ConvolveStep>(params); }

}  // namespace imflow
