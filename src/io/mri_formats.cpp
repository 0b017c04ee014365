// Input-format adapters for PNG slices and NIfTI volumes (one plane per slice).
#include "mri_formats.hpp"

#include "imflow/io/input_format.hpp"
#include "imflow/io/nifti.hpp"
#include "imflow/io/png.hpp"

namespace imflow {

std::vector<PlaneInfo> scan_png_planes(const std::filesystem::path& path) {
  const PngInfo info = scan_png(path);
  PlaneInfo plane;
  plane.width = info.width;
  plane.height = info.height;
  plane.bit_depth = info.bit_depth;
  return {plane};
}

int64_t read_png_plane(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits) {
  return read_png(ref.path, out, limits);
}

std::vector<PlaneInfo> scan_nifti_planes(const std::filesystem::path& path) {
  const int axis = nifti_slice_axis();
  const NiftiInfo info = scan_nifti(path);
  prefetch_nifti(path, axis);  // the scan runs over several files at once: their streams inflate in parallel
  std::vector<PlaneInfo> planes;
  const int64_t count = info.slices(axis);
  planes.reserve(static_cast<size_t>(count));
  for (int64_t p = 0; p < count; ++p) {
    planes.push_back({0, p, count, info.slice_width(axis), info.slice_height(axis), info.bit_depth(), "", ""});
  }
  return planes;
}

int64_t read_nifti_plane(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits) {
  return read_nifti_slice(ref.path, nifti_slice_axis(), ref.plane, out, limits);
}

std::vector<std::filesystem::path> nifti_data_files(const std::filesystem::path& path) {
  if (auto image = nifti_pair_image(path)) return {*image};
  return {};
}

}  // namespace imflow
