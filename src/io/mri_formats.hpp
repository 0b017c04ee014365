// The `png` and `nifti` entries of the input-format table (src/io/input_formats.cpp).
#pragma once
#include <filesystem>
#include <vector>

#include "imflow/io/input_format.hpp"

namespace imflow {

std::vector<PlaneInfo> scan_png_planes(const std::filesystem::path& path);
int64_t read_png_plane(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits);

// Slices along nifti_slice_axis() (set from the pipeline's input.nifti_axis).
std::vector<PlaneInfo> scan_nifti_planes(const std::filesystem::path& path);
int64_t read_nifti_plane(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits);
// The .img of a .hdr/.img pair; none for a single file.
std::vector<std::filesystem::path> nifti_data_files(const std::filesystem::path& path);

}  // namespace imflow
