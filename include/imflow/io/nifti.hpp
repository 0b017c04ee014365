// NIfTI-1/NIfTI-2 volumes (.nii, .nii.gz, .hdr/.img) through Debian's nifticlib: each slice along a configurable
// axis is one plane; scl_slope/scl_inter applied; uint8/int16/uint16/int32/float32/float64.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"

namespace imflow {

// The slice axis (0 = i, 1 = j, 2 = k) used by the `nifti` input format for the whole process;
// the pipeline's input.nifti_axis sets it at the start of a run. Thread-safe.
void set_nifti_slice_axis(int axis);
int nifti_slice_axis();

// Budget in bytes of the process-wide cache of whole NIfTI voxel data (0: none), which lets the
// slices of a .nii.gz, or slices across the file's layout (axis 0 or 1), come from one read of
// the file instead of one each; setting it empties the cache. The pipeline's
// input.nifti_cache_mb sets it at the start of a run (default 1 GiB). Thread-safe.
void set_nifti_cache_bytes(uint64_t bytes);
uint64_t nifti_cache_bytes();

struct NiftiInfo {
  int64_t dims[7] = {1, 1, 1, 1, 1, 1, 1};  // nx, ny, nz, nt, ... (1 beyond dim[0])
  int datatype = 0;                          // NIfTI DT_* code
  int bytes_per_voxel = 0;
  double slope = 0.0;                        // scl_slope as stored (0: no scaling)
  double inter = 0.0;
  // Slices along `axis`: width, height and count (count includes dims 4..7, volume-major).
  int64_t slice_width(int axis) const;
  int64_t slice_height(int axis) const;
  int64_t slices(int axis) const;
  // 8 or 16 for unscaled uint8 / (u)int16 data, 0 otherwise (PlaneInfo::bit_depth).
  int bit_depth() const;
};

// The voxel file of a .hdr/.img pair (X.img, X.img.gz or their upper-case names, the first that
// exists); nullopt for a single file (.nii, .nii.gz) or when none exists.
std::optional<std::filesystem::path> nifti_pair_image(const std::filesystem::path& path);

// Read and validate the header: dimensions, datatype, and the data size against the file size
// (for .nii.gz against what deflate can expand to). Throws InputError naming the file.
NiftiInfo scan_nifti(const std::filesystem::path& path);

// When the slices of `path` along `axis` come from its whole voxel data (a .nii.gz; axis 0 or 1)
// and it fits in the cache beside what is there, read it now (the input scan calls this, several
// files at a time, so gzip streams inflate in parallel rather than each while all readers wait
// for it). Returns whether the data is cached. Throws InputError as scan_nifti.
bool prefetch_nifti(const std::filesystem::path& path, int axis);

// Read slice `plane` along `axis` into `out` (width = first remaining axis, rows along the
// second), scaled to float32. Checks the slice size against limits.max_pixels before allocating.
// Returns the bytes of the slice as stored.
int64_t read_nifti_slice(const std::filesystem::path& path, int axis, int64_t plane, ImageBuffer& out,
                         const ReadLimits& limits = {});

}  // namespace imflow
