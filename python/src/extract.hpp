// What sep.extract was asked and what it found, shared by the CPU path (extract.cpp) and the
// device path (gpu.cpp), which both end in extract.cpp's catalog columns.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/sep_filter.hpp"
#include "imflow/source.hpp"

namespace imflow::python {

struct ExtractResult {
  Catalog catalog;   // measured on the detection values (filtered when filtering): SEP's x, y, moments, cpeak
  Catalog raw;       // measured on the unfiltered values when filtering: SEP's flux, peak
  kernels::DeblendResult deblend;
  std::vector<int64_t> tnpix;
  std::vector<int32_t> segmap;
  bool from_map = false;  // the objects of a given segmentation map (SEP flags none of them)
};

// What extract() was asked: noise as a map (err or var, masked pixels already BIG) or one sigma.
struct Request {
  ConstImageView data;
  const float* noise = nullptr;
  bool noise_is_var = false;
  std::optional<double> err;
  double thresh = 0.0;
  std::optional<kernels::SepFilterKernel> filter;
  bool matched = false;
  const int32_t* labels = nullptr;  // a given segmentation map, 1..nlabels
  int32_t nlabels = 0;
  bool want_segmap = true;  // the caller asked for the segmentation map (sep.extract's segmentation_map)
};

// sep.extract on the device (gpu.cpp): without a given map (NotImplementedError otherwise, raised
// by imflow/sep.py). Runs without the GIL; throws std::runtime_error naming
// "no CUDA device", or that the module was built without CUDA.
ExtractResult run_extract_gpu(const Request& q, const kernels::DeblendParams& params,
                              const kernels::MeasureBackground& background);

}  // namespace imflow::python
