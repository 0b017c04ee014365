// Where a NIfTI slice's voxels lie in the voxel data, and gathering them into slice order.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/io/nifti.hpp"

namespace imflow {

// Where slice voxels lie in the data (voxel indices, first axis fastest): the span from `first` to
// `last` holds them, columns along axis `a` and rows along axis `b` (NiftiInfo::slice_width/height).
struct SliceSpan {
  int64_t stride[7] = {1, 1, 1, 1, 1, 1, 1};
  int64_t first = 0, last = 0;
  int a = 0, b = 0;
  int64_t width = 0, height = 0;
  int64_t voxels() const { return last - first + 1; }
  // Rows follow each other in the data with no gap (axis 2 of any volume): the slice is its span.
  bool contiguous() const { return stride[a] == 1 && (height == 1 || stride[b] == width); }
};

SliceSpan slice_span(const NiftiInfo& info, const int64_t start[7], const int64_t size[7], int axis);

// The slice's voxels in slice order from `data` (the data's bytes from voxel span.first on), their
// `swapsize`-byte units swapped to this machine's byte order when `swap` (swapsize 0 or 1: bytes,
// as RGB), as nifticlib would: `data` itself when that is already the slice, else `scratch` filled.
const unsigned char* gather_slice(const unsigned char* data, const SliceSpan& span, int64_t bpv, bool swap, int swapsize,
                                  std::vector<unsigned char>& scratch);

}  // namespace imflow
