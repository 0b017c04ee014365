// libFuzzer target: scan_nifti + read_nifti_slice (nifticlib) on arbitrary bytes named x.nii.
#include "fuzz_common.hpp"
#include "imflow/io/nifti.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = imflow::fuzz::input_file(".nii", data, size);
  imflow::ReadLimits limits;
  limits.max_pixels = int64_t{1} << 22;
  try {
    const imflow::NiftiInfo info = imflow::scan_nifti(path);
    for (int axis = 0; axis < 3; ++axis) {
      for (int64_t slice = 0; slice < info.slices(axis) && slice < 2; ++slice) {
        imflow::ImageBuffer pixels;
        imflow::read_nifti_slice(path, axis, slice, pixels, limits);
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}
