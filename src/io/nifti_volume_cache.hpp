// A process-wide, byte-bounded LRU cache of NIfTI voxel data read whole, so that the slices of a
// .nii.gz (or slices across the file's layout) are inflated once per file instead of once per slice.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace imflow {

// The voxel data of one file as far as it could be read: bytes [0, valid) hold data, the rest
// was missing (truncated or corrupt file; `reason` says why).
struct NiftiVolumeData {
  std::vector<unsigned char> bytes;
  uint64_t valid = 0;
  std::string reason;
};

// The data of `path` (identified by path, inode, size and times, so a rewritten file is read
// again), loaded with `load` by the first thread that asks while the others wait for it. Returns
// nullptr when `data_bytes` exceeds the budget (set_nifti_cache_bytes, imflow/io/nifti.hpp): the caller reads the slice on its own then.
// Least recently used entries are dropped to stay within the budget (an entry still being read
// from lives until its last reader is done).
std::shared_ptr<const NiftiVolumeData> cached_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                                                          const std::function<NiftiVolumeData()>& load);

// The same, ahead of the slices' reads (the input scan, which runs over several files at once, so
// their streams inflate in parallel instead of one after the other while every reader waits): loads
// the data only when it fits beside what the cache holds, never evicting. Returns whether the data
// is (or is being) cached.
bool prefetch_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                           const std::function<NiftiVolumeData()>& load);

}  // namespace imflow
