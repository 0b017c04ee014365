// The deblending workspace (cuda/deblend.hpp): its buffers' lifetime, and the result of the last
// call read back from the mapped pinned memory the device wrote.
#include <stdexcept>

#include "cuda/deblend.hpp"
#include "cuda/deblend_buffers.hpp"

namespace imflow::cuda {

using deblend_detail::kErrorLabelRange;
using deblend_detail::kErrorNone;
using deblend_detail::kErrorNotConnected;

DeblendWorkspace::DeblendWorkspace() : buffers_(std::make_unique<DeblendBuffers>()) {}
DeblendWorkspace::~DeblendWorkspace() = default;
DeblendWorkspace::DeblendWorkspace(DeblendWorkspace&&) noexcept = default;
DeblendWorkspace& DeblendWorkspace::operator=(DeblendWorkspace&&) noexcept = default;

int32_t DeblendWorkspace::objects() const {
  if (!buffers_->has_result || !buffers_->summary.data()->valid)
    throw std::logic_error("deblend: no result (no call, or its stream has not completed)");
  return buffers_->summary.data()->survivors;
}

void DeblendWorkspace::set_host_split_min_pixels(int32_t min_pixels) {
  buffers_->host_split_min = min_pixels > 0 ? min_pixels : 0;
}
int32_t DeblendWorkspace::host_splits() const { return buffers_->host_splits.count(); }
const DeblendRecord* DeblendWorkspace::device_records() const { return buffers_->records.device_pointer(); }

kernels::DeblendResult DeblendWorkspace::result() const {
  const DeblendBuffers& B = *buffers_;
  if (!B.has_result || !B.summary.data()->valid)
    throw std::logic_error("deblend: no result (no call, or its stream has not completed)");
  const DeblendSummary s = *B.summary.data();
  if (s.error == kErrorNotConnected) throw std::invalid_argument("deblend: a label is not one 8-connected component");
  if (s.error == kErrorLabelRange) throw std::invalid_argument("deblend: a label outside 1..nlabels");
  if (s.error != kErrorNone) throw std::logic_error("deblend: the device found its state inconsistent");
  kernels::DeblendResult result;
  result.segments = s.segments;
  result.segments_split = s.segments_split;
  result.objects_cleaned = s.objects - s.survivors;
  result.random_draws = s.draws;
  result.objects.resize(static_cast<size_t>(s.survivors));
  for (int32_t i = 0; i < s.survivors; ++i) {
    const DeblendRecord& r = B.records.data()[i];
    kernels::DeblendObject& o = result.objects[static_cast<size_t>(i)];
    o.segment = r.segment;
    o.blended = r.blended != 0;
    o.truncated = r.truncated != 0;
    o.singular = r.singular != 0;
    o.merged = r.merged != 0;
    o.x = r.x;
    o.y = r.y;
    o.thresh = r.thresh;
    o.npix = r.npix;
    o.flux = r.flux;
  }
  return result;
}

}  // namespace imflow::cuda
