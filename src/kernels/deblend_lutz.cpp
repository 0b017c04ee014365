// SEP's Lutz scan (lutz.c, the same algorithm as extract.c's main loop) ported step by step:
// it decides the order in which components are completed and the order in which each
// component's pixels are linked, which SEP's deblending and CLEAN depend on. Also the segments'
// scan order and one segment's pixels in chain order.
#include <algorithm>
#include <stdexcept>

#include "deblend_internal.hpp"

namespace imflow::kernels {

namespace deblend_detail {

namespace {
enum PixStatus : int { kComplete, kIncomplete, kNonObject, kObject };
constexpr int64_t kUnknown = -1;

void update(LutzInfo& a, const LutzInfo& b, std::vector<int64_t>& next) {
  a.pixnb += b.pixnb;
  if (a.firstpix == -1) {
    a.firstpix = b.firstpix;
    a.lastpix = b.lastpix;
  } else if (b.lastpix != -1) {
    next[static_cast<size_t>(a.lastpix)] = b.firstpix;
    a.lastpix = b.lastpix;
  }
}
}  // namespace

void lutz_scan(const uint8_t* mask, int64_t width, int64_t height, int64_t min_pixels, LutzScratch& s,
               Components& out) {
  out.pixels.clear();
  out.offsets.assign(1, 0);
  const size_t stack = static_cast<size_t>(width) + 2;
  s.info.assign(stack, LutzInfo{});
  s.store.assign(stack, LutzInfo{});
  s.marker.assign(stack, 0);
  s.psstack.assign(2 * stack, kComplete);
  s.start.assign(stack, 0);
  s.end.assign(stack, 0);
  s.pixel.clear();
  s.next.clear();
  auto& info = s.info;
  auto& store = s.store;
  auto& marker = s.marker;
  auto& psstack = s.psstack;
  auto& start = s.start;
  auto& end = s.end;
  auto& next = s.next;

  int64_t co = 0, pstop = 0;
  for (int64_t yl = 0; yl <= height; ++yl) {
    int ps = kComplete, cs = kNonObject;
    const uint8_t* row = yl < height ? mask + yl * width : nullptr;
    for (int64_t xl = 0; xl <= width; ++xl) {
      const char newmarker = marker[xl];
      marker[xl] = 0;
      const bool luflag = row != nullptr && xl < width && row[xl] != 0;
      LutzInfo cur;
      if (luflag) {
        const int64_t cn = static_cast<int64_t>(s.pixel.size());
        s.pixel.push_back(yl * width + xl);
        next.push_back(-1);
        cur.pixnb = 1;
        cur.firstpix = cur.lastpix = cn;
        // start of a segment (a run)
        if (cs != kObject) {
          cs = kObject;
          if (ps == kObject) {
            if (start[co] == kUnknown) {
              marker[xl] = 'S';
              start[co] = xl;
            } else {
              marker[xl] = 's';
            }
          } else {
            psstack[pstop++] = ps;
            marker[xl] = 'S';
            start[++co] = xl;
            ps = kComplete;
            info[co] = LutzInfo{};
          }
        }
      }
      if (newmarker != 0) {
        if (newmarker == 'S') {
          psstack[pstop++] = ps;
          if (cs == kNonObject) {
            psstack[pstop++] = kComplete;
            info[++co] = store[xl];
            start[co] = kUnknown;
          } else {
            update(info[co], store[xl], next);
          }
          ps = kObject;
        } else if (newmarker == 's') {
          if (cs == kObject && ps == kComplete) {
            pstop--;
            const int64_t xl2 = start[co];
            update(info[co - 1], info[co], next);
            if (start[--co] == kUnknown) {
              start[co] = xl2;
            } else {
              marker[xl2] = 's';
            }
          }
          ps = kObject;
        } else if (newmarker == 'f') {
          ps = kIncomplete;
        } else if (newmarker == 'F') {
          ps = psstack[--pstop];
          if (cs == kNonObject && ps == kComplete) {
            if (start[co] == kUnknown) {
              if (info[co].pixnb >= min_pixels) {
                for (int64_t p = info[co].firstpix; p != -1; p = next[static_cast<size_t>(p)])
                  out.pixels.push_back(s.pixel[static_cast<size_t>(p)]);
                out.offsets.push_back(static_cast<int64_t>(out.pixels.size()));
              }
            } else {
              marker[end[co]] = 'F';
              store[start[co]] = info[co];
            }
            co--;
            ps = psstack[--pstop];
          }
        }
      }
      if (luflag) {
        update(info[co], cur, next);
      } else if (cs == kObject) {
        // end of a segment
        cs = kNonObject;
        if (ps != kComplete) {
          marker[xl] = 'f';
          end[co] = xl;
        } else {
          ps = psstack[--pstop];
          marker[xl] = 'F';
          store[start[co]] = info[co];
          co--;
        }
      }
    }
  }
}

void gather_segment(const DeblendInput& input, int32_t label, int64_t x0, int64_t y0, int64_t w, int64_t h,
                    LutzScratch& scratch, SegmentPixels& s) {
  const int64_t width = input.detection.width;
  std::vector<uint8_t> mask(static_cast<size_t>(w * h));
  for (int64_t y = 0; y < h; ++y) {
    const int32_t* row = input.labels + (y0 + y) * width + x0;
    for (int64_t x = 0; x < w; ++x) mask[static_cast<size_t>(y * w + x)] = row[x] == label;
  }
  Components components;
  lutz_scan(mask.data(), w, h, 1, scratch, components);
  if (components.size() != 1) throw std::invalid_argument("deblend: a label is not one 8-connected component");
  s.label = label;
  s.x0 = x0;
  s.y0 = y0;
  s.width = w;
  s.height = h;
  const size_t n = components.pixels.size();
  s.x.resize(n);
  s.y.resize(n);
  s.cd.resize(n);
  s.value.resize(n);
  s.thresh.resize(n);
  s.submap.assign(static_cast<size_t>(w * h), -1);
  const float* measurement = input.measurement != nullptr ? input.measurement : input.detection.data;
  double thresh_sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = components.pixels[i];
    const int64_t px = p % w, py = p / w;
    const int64_t image_index = (y0 + py) * width + x0 + px;
    s.x[i] = static_cast<int32_t>(px);
    s.y[i] = static_cast<int32_t>(py);
    s.cd[i] = input.detection.data[image_index];
    s.value[i] = measurement[image_index];
    s.thresh[i] = input.threshold_map != nullptr ? input.threshold_map[image_index] : input.threshold;
    s.submap[static_cast<size_t>(p)] = static_cast<int32_t>(i);
    thresh_sum += static_cast<double>(s.thresh[i]);
  }
  s.thresh0 = static_cast<float>(thresh_sum / static_cast<double>(n));
}

}  // namespace deblend_detail

std::vector<int32_t> sep_segment_order(const int32_t* labels, int64_t width, int64_t height, int32_t nlabels) {
  std::vector<int64_t> last(static_cast<size_t>(nlabels) + 1, -1);
  for (int64_t i = 0; i < width * height; ++i) {
    const int32_t l = labels[i];
    if (l > 0) last[static_cast<size_t>(l)] = i;
  }
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(nlabels));
  for (int32_t l = 1; l <= nlabels; ++l)
    if (last[static_cast<size_t>(l)] >= 0) order.push_back(l);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return last[static_cast<size_t>(a)] < last[static_cast<size_t>(b)]; });
  return order;
}

}  // namespace imflow::kernels
