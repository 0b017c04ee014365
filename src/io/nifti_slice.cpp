// Slice spans and gathering of NIfTI slices (nifti_slice.hpp): whole rows copied at once where
// they are contiguous, voxels of a fixed size otherwise.
#include "nifti_slice.hpp"

#include <nifti2_io.h>

#include <cstring>

namespace imflow {

namespace {
template <size_t Bytes>
void gather_voxels(const unsigned char* data, const SliceSpan& span, unsigned char* out) {
  const int64_t column = span.stride[span.a] * static_cast<int64_t>(Bytes);
  for (int64_t r = 0; r < span.height; ++r) {
    const unsigned char* from = data + r * span.stride[span.b] * static_cast<int64_t>(Bytes);
    for (int64_t c = 0; c < span.width; ++c, out += Bytes) std::memcpy(out, from + c * column, Bytes);
  }
}
}  // namespace

SliceSpan slice_span(const NiftiInfo& info, const int64_t start[7], const int64_t size[7], int axis) {
  SliceSpan span;
  for (int d = 1; d < 7; ++d) span.stride[d] = span.stride[d - 1] * info.dims[d - 1];
  for (int d = 0; d < 7; ++d) {
    span.first += start[d] * span.stride[d];
    span.last += (start[d] + size[d] - 1) * span.stride[d];
  }
  span.a = axis == 0 ? 1 : 0;
  span.b = axis == 2 ? 1 : 2;
  span.width = size[span.a];
  span.height = size[span.b];
  return span;
}

const unsigned char* gather_slice(const unsigned char* data, const SliceSpan& span, int64_t bpv, bool swap, int swapsize,
                                  std::vector<unsigned char>& scratch) {
  const bool swapped = swap && swapsize > 1;
  if (span.contiguous() && !swapped) return data;
  const auto row_bytes = static_cast<size_t>(span.width * bpv);
  scratch.resize(row_bytes * static_cast<size_t>(span.height));
  unsigned char* out = scratch.data();
  if (span.stride[span.a] == 1) {  // rows contiguous (axis 1)
    for (int64_t r = 0; r < span.height; ++r) std::memcpy(out + r * row_bytes, data + r * span.stride[span.b] * bpv, row_bytes);
  } else {
    switch (bpv) {
      case 1: gather_voxels<1>(data, span, out); break;
      case 2: gather_voxels<2>(data, span, out); break;
      case 3: gather_voxels<3>(data, span, out); break;
      case 4: gather_voxels<4>(data, span, out); break;
      case 8: gather_voxels<8>(data, span, out); break;
      default:
        for (int64_t r = 0; r < span.height; ++r) {
          for (int64_t c = 0; c < span.width; ++c, out += bpv) {
            std::memcpy(out, data + (r * span.stride[span.b] + c * span.stride[span.a]) * bpv, static_cast<size_t>(bpv));
          }
        }
        out = scratch.data();
    }
  }
  if (swapped) nifti_swap_Nbytes(static_cast<int64_t>(scratch.size()) / swapsize, swapsize, out);
  return out;
}

}  // namespace imflow
