// The deblending kernel's driver (kernels/deblend.hpp): the segments in SEP's scan order, each
// split and allocated independently (in parallel; SEP's rand_r stream is cut between segments
// by jumping the generator ahead over the draws of the segments before), then CLEAN over the
// whole list (SEP's, or SExtractor's with its merges) and the new label map.
#include "imflow/kernels/deblend.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "deblend_internal.hpp"
#include "imflow/kernels/sextractor_clean_release.hpp"

namespace imflow::kernels {

using namespace deblend_detail;

namespace {
struct Box {
  int64_t xmin = std::numeric_limits<int64_t>::max(), xmax = -1, ymin = std::numeric_limits<int64_t>::max(), ymax = -1;
  int64_t npix = 0;
};

struct SegmentWork {
  SegmentPixels pixels;
  SegmentSplit split;
  GatherModel model;
  SegmentObjects objects;
  uint32_t seed = 1;
  uint64_t first_draw = 0;
};

// SEP's edge flag of object o of a segment: its branch (its first branch_sizes[o] pixels, all
// of them when the segment was not split) touches the image edge.
bool branch_truncated(const SegmentPixels& s, const SegmentObjects& objects, size_t o, int64_t width, int64_t height) {
  const auto& px = objects.pixels[o];
  for (size_t i = 0; i < objects.branch_sizes[o]; ++i) {
    const int64_t x = s.x0 + s.x[static_cast<size_t>(px[i])], y = s.y0 + s.y[static_cast<size_t>(px[i])];
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1) return true;
  }
  return false;
}

template <typename Body>
void for_each_segment(size_t count, Body body) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, count, 1), [&](const tbb::blocked_range<size_t>& range) {
    SegmentScratch scratch;
    for (size_t i = range.begin(); i != range.end(); ++i) body(i, scratch);
  });
}

// A cleaned object's pixels in the detection mask (DeblendInput::detected), when given: 0 (pasted
// back), or 2 (blanked for every object) on the rows after `blanked_after`.
void unblank(const SegmentPixels& s, const std::vector<int32_t>& pixels, int64_t width, int64_t blanked_after,
             uint8_t* detected) {
  if (detected == nullptr) return;
  for (const int32_t p : pixels) {
    const int64_t y = s.y0 + s.y[static_cast<size_t>(p)];
    detected[y * width + s.x0 + s.x[static_cast<size_t>(p)]] = y > blanked_after ? 2 : 0;
  }
}
}  // namespace

DeblendResult deblend_sources(const DeblendInput& input, const DeblendParams& params, int32_t* labels_out) {
  if (params.nthresh < 1) throw std::invalid_argument("deblend: nthresh must be at least 1");
  if (!(params.mincont >= 0.0)) throw std::invalid_argument("deblend: mincont must be >= 0");
  if (params.minarea < 1) throw std::invalid_argument("deblend: minarea must be at least 1");
  if (params.clean && !(params.clean_param > 0.0)) throw std::invalid_argument("deblend: clean_param must be > 0");
  if (input.labels == nullptr || input.detection.data == nullptr || labels_out == nullptr)
    throw std::invalid_argument("deblend: missing image, labels or output");
  if (labels_out == input.labels) throw std::invalid_argument("deblend: the output may not alias the input labels");
  const int64_t width = input.detection.width, height = input.detection.height;

  // Bounding boxes and sizes; the scan order (raster order of each segment's last pixel).
  std::vector<Box> boxes(static_cast<size_t>(input.nlabels) + 1);
  for (int64_t y = 0; y < height; ++y) {
    const int32_t* row = input.labels + y * width;
    for (int64_t x = 0; x < width; ++x) {
      const int32_t l = row[x];
      if (l == 0) continue;
      if (l < 0 || l > input.nlabels) throw std::invalid_argument("deblend: a label outside 1..nlabels");
      Box& b = boxes[static_cast<size_t>(l)];
      b.xmin = std::min(b.xmin, x);
      b.xmax = std::max(b.xmax, x);
      b.ymin = std::min(b.ymin, y);
      b.ymax = y;
      ++b.npix;
    }
  }
  std::vector<int32_t> order;
  for (const int32_t l : sep_segment_order(input.labels, width, height, input.nlabels))
    if (boxes[static_cast<size_t>(l)].npix >= params.minarea) order.push_back(l);

  DeblendResult result;
  result.segments = static_cast<int64_t>(order.size());
  std::vector<SegmentWork> work(order.size());
  // Per segment: its pixels in chain order, the split, the allocation model and its draws.
  for_each_segment(order.size(), [&](size_t i, SegmentScratch& scratch) {
    const Box& b = boxes[static_cast<size_t>(order[i])];
    SegmentWork& w = work[i];
    gather_segment(input, order[i], b.xmin, b.ymin, b.xmax - b.xmin + 1, b.ymax - b.ymin + 1, scratch.lutz, w.pixels);
    // SExtractor's deblending starts from the segment's lowest pixel threshold (scan.c preanalyse:
    // obj->dthresh = minthresh), SEP's from their mean: they differ where thresholds vary per pixel.
    // A threshold map is SExtractor's detection weighting (WEIGHT_TYPE BACKGROUND or a map:
    // prefs.dweight_flag), under which its preanalyse also sets abcor to 1 (SegmentPixels).
    if (params.clean_style == DeblendCleanStyle::sextractor && !w.pixels.thresh.empty()) {
      w.pixels.thresh0 = *std::min_element(w.pixels.thresh.begin(), w.pixels.thresh.end());
      w.pixels.sextractor_weighted = input.threshold_map != nullptr;
    }
    split_segment(w.pixels, params, scratch, w.split);
    gather_model(w.pixels, w.split, w.model);
    std::vector<int32_t>().swap(w.pixels.submap);
  });
  // SEP's generator: seeded 1 per extract call, drawn in scan order.
  uint64_t draws = 0;
  for (SegmentWork& w : work) {
    w.seed = glibc_rand_r_skip(1u, draws);
    w.first_draw = draws;
    draws += static_cast<uint64_t>(w.model.draws);
  }
  result.random_draws = static_cast<int64_t>(draws);
  // SExtractor's numbers: one rand() stream for the image, each segment its part in scan order.
  std::vector<int32_t> stream;
  if (params.allocation == DeblendAllocation::sextractor_random) glibc_rand_stream(draws, stream);
  for_each_segment(order.size(), [&](size_t i, SegmentScratch&) {
    SegmentWork& w = work[i];
    allocate_segment(w.pixels, w.split, w.model, params.allocation, w.seed,
                     stream.empty() ? nullptr : stream.data() + w.first_draw, w.objects);
    if (params.clean) {
      for (size_t o = 0; o < w.objects.pixels.size(); ++o) {
        const auto& px = w.objects.pixels[o];
        w.objects.measured[o].mthresh = sep_mthresh(w.pixels, px.data(), static_cast<int64_t>(px.size()), params.minarea);
      }
    }
    w.model = GatherModel{};
  });

  std::vector<const SepObject*> all;
  for (const SegmentWork& w : work) {
    if (w.objects.blended) ++result.segments_split;
    for (const SepObject& o : w.objects.measured) all.push_back(&o);
  }
  std::vector<uint8_t> survives(all.size(), 1);
  // SExtractor's CLEAN: eaten_by[i] the object i was merged into; owner[i] the survivor at the
  // end of that chain (an earlier object in the list, or a later newcomer that ate it).
  std::vector<int32_t> eaten_by, owner;
  std::vector<float> merged_flux;
  std::vector<SextractorCleanObject> listed;
  if (params.clean && params.clean_style == DeblendCleanStyle::sextractor) {
    listed.reserve(all.size());
    for (const SegmentWork& w : work) {
      const int64_t last_row = w.pixels.y0 + w.pixels.height - 1;
      for (const SepObject& o : w.objects.measured)
        listed.push_back({&o, w.pixels.y0 + o.ymin, w.pixels.y0 + o.ymax, last_row});
    }
    sextractor_clean(listed, height, params.clean_param, params.memory_bufsize,
                     static_cast<size_t>(params.memory_objstack), sextractor_strip_margin(params.blank_lag),
                     eaten_by, merged_flux);
    owner.resize(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      int32_t r = static_cast<int32_t>(i);
      while (eaten_by[static_cast<size_t>(r)] >= 0) r = eaten_by[static_cast<size_t>(r)];
      owner[i] = r;
      survives[i] = r == static_cast<int32_t>(i) ? 1 : 0;
    }
  } else if (params.clean) {
    sep_clean(all, params.clean_param, survives);
  }

  std::fill(labels_out, labels_out + width * height, 0);
  std::vector<int32_t> ids(all.size(), 0);  // the label of a surviving object
  std::vector<std::pair<const SegmentWork*, size_t>> where;
  if (!owner.empty()) where.reserve(all.size());
  size_t index = 0;
  for (const SegmentWork& w : work) {
    const SegmentPixels& s = w.pixels;
    for (size_t o = 0; o < w.objects.pixels.size(); ++o, ++index) {
      if (!owner.empty()) where.emplace_back(&w, o);
      if (!survives[index]) {
        ++result.objects_cleaned;
        if (owner.empty()) unblank(s, w.objects.pixels[o], width, std::numeric_limits<int64_t>::max(), input.detected);
        continue;
      }
      if (result.objects.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        throw std::overflow_error("deblend: more than 2^31-1 objects");
      const int32_t id = static_cast<int32_t>(result.objects.size()) + 1;
      ids[index] = id;
      const SepObject& m = w.objects.measured[o];
      DeblendObject object;
      object.segment = s.label;
      object.blended = w.objects.blended;
      object.x = m.mx;
      object.y = m.my;
      object.thresh = s.thresh0;
      object.npix = static_cast<int64_t>(w.objects.pixels[o].size());
      object.truncated = branch_truncated(s, w.objects, o, width, height);
      object.flux = owner.empty() ? m.fdflux : merged_flux[index];
      object.singular = m.singular;
      result.objects.push_back(object);
      for (const int32_t p : w.objects.pixels[o])
        labels_out[(s.y0 + s.y[static_cast<size_t>(p)]) * width + s.x0 + s.x[static_cast<size_t>(p)]] = id;
    }
  }
  // A merged object's pixels take its survivor's label; the survivor's count and flags grow.
  for (size_t i = 0; i < owner.size(); ++i) {
    if (survives[i]) continue;
    const auto [w, o] = where[i];
    const SegmentPixels& s = w->pixels;
    const int32_t id = ids[static_cast<size_t>(owner[i])];
    DeblendObject& survivor = result.objects[static_cast<size_t>(id) - 1];
    survivor.merged = true;
    survivor.npix += static_cast<int64_t>(w->objects.pixels[o].size());
    survivor.truncated = survivor.truncated || branch_truncated(s, w->objects, o, width, height);
    // Merged while the scan completed the later object's segment, on the line after its last row:
    // the rows the scan had not blanked yet stay blanked (DeblendParams::blank_lag).
    const SextractorCleanObject& newcomer = listed[std::max(i, static_cast<size_t>(eaten_by[i]))];
    unblank(s, w->objects.pixels[o], width, newcomer.last_row + 1 - params.blank_lag, input.detected);
    for (const int32_t p : w->objects.pixels[o])
      labels_out[(s.y0 + s.y[static_cast<size_t>(p)]) * width + s.x0 + s.x[static_cast<size_t>(p)]] = id;
  }
  return result;
}

}  // namespace imflow::kernels
