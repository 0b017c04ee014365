// A process-wide, byte-bounded LRU cache of NIfTI voxel data read whole, so that the slices of a
// .nii.gz (or slices across the file's layout) are inflated once per file instead of once per slice;
// and the parsed headers, so that a slice read does not open and parse its file's header again.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "imflow/io/nifti.hpp"

namespace imflow {

// The voxel data of one file as far as it could be read (shorter than the header says when the
// file is truncated or corrupt).
using NiftiVolumeBytes = std::vector<unsigned char>;

// The data of `path` (identified by path, inode, size, times and its last 8 bytes, so a rewritten
// file is read again), `data_bytes` long per its header, loaded with `load` by the first thread
// that asks while the others wait for it. Returns nullptr when `data_bytes` exceeds the budget
// (set_nifti_cache_bytes, imflow/io/nifti.hpp): the caller reads the slice on its own then. Least
// recently used entries are dropped to stay within the budget (an entry still being read from
// lives until its last reader is done).
std::shared_ptr<const NiftiVolumeBytes> cached_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                                                           const std::function<NiftiVolumeBytes()>& load);

// The same, ahead of the slices' reads (the input scan, which runs over several files at once, so
// their streams inflate in parallel instead of one after the other while every reader waits): to
// make room it drops only volumes that have been read from, never another prefetch's, and loads
// nothing when that is not enough. Returns whether the data is (or is being) cached.
bool prefetch_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                           const std::function<NiftiVolumeBytes()>& load);

// Whether a gzip data file's whole stream inflated cleanly, found once per file version by the
// first slice read that needs to know (a volume read slice by slice, beyond the cache).
struct GzipStreamCheck {
  std::once_flag once;
  std::string problem;  // empty: the stream is sound (or cut short, which the slices find)
};

// What a slice read needs from a file's header.
struct NiftiHeader {
  NiftiInfo info;
  std::filesystem::path data_file;  // the file itself, or the .img of a .hdr/.img pair
  int64_t data_offset = 0;          // of the voxel data in data_file (vox_offset)
  bool swap = false;                // stored in the other byte order
  int swapsize = 0;                 // bytes swapped as a unit (nifticlib's)
  std::shared_ptr<GzipStreamCheck> stream_check = std::make_shared<GzipStreamCheck>();
};

// The header of `path` (identified as cached_nifti_volume identifies a file), parsed by `parse` the
// first time and again whenever the file changed; what `parse` throws is thrown, and not kept.
std::shared_ptr<const NiftiHeader> cached_nifti_header(const std::filesystem::path& path,
                                                       const std::function<NiftiHeader()>& parse);

}  // namespace imflow
