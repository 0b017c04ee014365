// CLEAN as SExtractor 2.25 does it (clean.c's clean, addcleanobj, mergeobject and subcleanobj,
// with scan.c's release of the CLEAN list), object for object: each object, as the scan
// completes it, is tested against the objects still in the list and merged into the one that
// explains it, or merges those it explains into itself (deblend's clean_style: sextractor).
//
// The list's order matters (a newcomer merges into the first listed object that eats it) and is
// SExtractor's: newcomers are appended, removals move the last entry into the hole. Objects leave
// it as SExtractor's scan releases them: after each line once the image buffer (MEMORY_BUFSIZE,
// default 1024 lines) starts to slide, those whose margin (addcleanobj's ycmin) lies below the
// buffer's first line; and the one of lowest ycmax when the list holds MEMORY_OBJSTACK (default
// 3000) objects. The pairs the test may meet are found beforehand (clean_candidates): merges change
// fluxes and pixel counts but no centre or radius, so the zone test never changes.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "deblend_internal.hpp"
#include "imflow/kernels/sextractor_clean_release.hpp"

namespace imflow::kernels::deblend_detail {

namespace {
constexpr double kMarginScale = 2.0;    // define.h's MARGIN_SCALE
constexpr double kMarginOffset = 4.0;   // and MARGIN_OFFSET

struct Entry {
  uint32_t index = 0;
  int64_t ycmin = 0, ycmax = 0;
};

// addcleanobj's vertical extent of an object (rows ymin..ymax after its merges), with its float
// and double steps.
void clean_extent(const SepObject& o, int64_t ymin, int64_t ymax, Entry& e) {
  float hh1 = static_cast<float>(o.cyy - static_cast<double>(o.cxy * o.cxy) / (4.0 * o.cxx));
  hh1 = hh1 > 0.0f ? static_cast<float>(1 / std::sqrt(static_cast<double>(3 * hh1))) : 0.0f;
  const float hh2 = static_cast<float>(static_cast<double>(ymax - ymin) + 1.0);
  double m = static_cast<double>(hh1 > hh2 ? hh1 : hh2) * kMarginScale + kMarginOffset + 0.49999;
  m = std::isfinite(m) ? std::min(m, 1e15) : 1e15;
  const int64_t margin = static_cast<int64_t>(m);
  e.ycmax = ymax + margin;
  e.ycmin = ymin - margin;
  if (std::isfinite(o.my) && std::abs(o.my) < 1e15) {
    const int64_t y = static_cast<int64_t>(o.my + 0.49999);  // + CLEAN margin 0 (no apertures)
    e.ycmax = std::max(e.ycmax, y);
    e.ycmin = std::min(e.ycmin, y);
  }
}
}  // namespace

void sextractor_clean(const std::vector<SextractorCleanObject>& objects, int64_t image_height, double clean_param,
                      int64_t buffer_lines, size_t object_stack, int64_t strip_margin,
                      std::vector<int32_t>& eaten_by, std::vector<float>& fdflux) {
  const size_t n = objects.size();
  eaten_by.assign(n, -1);
  fdflux.resize(n);
  std::vector<int64_t> fdnpix(n), ymin(n), ymax(n);
  std::vector<const SepObject*> list_objects(n);
  for (size_t i = 0; i < n; ++i) {
    const SepObject& o = *objects[i].object;
    fdflux[i] = o.fdflux;
    fdnpix[i] = o.fdnpix;
    ymin[i] = objects[i].ymin;
    ymax[i] = objects[i].ymax;
    list_objects[i] = &o;
  }
  if (n == 0) return;

  // For each newcomer i, the earlier objects it may meet (the candidate pairs, inverted).
  std::vector<int64_t> offsets, earlier_offsets(n + 1, 0);
  std::vector<uint32_t> later;
  clean_candidates(list_objects, offsets, later);
  for (const uint32_t j : later) ++earlier_offsets[j + 1];
  for (size_t i = 0; i < n; ++i) earlier_offsets[i + 1] += earlier_offsets[i];
  std::vector<uint32_t> earlier(later.size());
  {
    std::vector<int64_t> fill(earlier_offsets.begin(), earlier_offsets.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k)
        earlier[static_cast<size_t>(fill[later[static_cast<size_t>(k)]]++)] = static_cast<uint32_t>(i);
  }
  std::vector<int64_t>().swap(offsets);
  std::vector<uint32_t>().swap(later);

  std::vector<Entry> list;
  std::vector<int64_t> position(n, -1);  // an object's place in the list, -1 when out of it
  auto remove_at = [&](size_t k) {       // subcleanobj
    position[list[k].index] = -1;
    if (k + 1 != list.size()) {
      list[k] = list.back();
      position[list[k].index] = static_cast<int64_t>(k);
    }
    list.pop_back();
  };
  // After the scan's line L: the release of objects whose ycmin <= the buffer's first line, when
  // the buffer is about to slide (scan.c: stripy == stripysclim).
  auto release_after_line = [&](int64_t line) {
    int64_t first_line = 0;
    if (!sextractor_releases_after(line, image_height, buffer_lines, strip_margin, first_line)) return;
    for (size_t k = list.size(); k-- > 0;)
      if (list[k].ycmin <= first_line) remove_at(k);
  };
  auto merge = [&](size_t slave, size_t master) {  // mergeobject's sums and box
    fdflux[master] += fdflux[slave];
    fdnpix[master] += fdnpix[slave];
    ymin[master] = std::min(ymin[master], ymin[slave]);
    ymax[master] = std::max(ymax[master], ymax[slave]);
    eaten_by[slave] = static_cast<int32_t>(master);
  };

  const double beta = clean_param;
  int64_t released_through = -1;
  std::vector<int64_t> places, victims;
  for (size_t i = 0; i < n; ++i) {
    // The scan completes an object's segment on the line after its last row.
    while (released_through < objects[i].last_row) release_after_line(++released_through);
    if (list.size() >= object_stack) {
      size_t victim = 0;
      for (size_t k = 1; k < list.size(); ++k)
        if (list[k].ycmax < list[victim].ycmax) victim = k;
      remove_at(victim);
    }

    const SepObject& in = *objects[i].object;
    double ampin, alphain;
    clean_moffat(in, beta, fdflux[i], fdnpix[i], ampin, alphain);
    places.clear();
    for (int64_t k = earlier_offsets[i]; k < earlier_offsets[i + 1]; ++k) {
      const int64_t place = position[earlier[static_cast<size_t>(k)]];
      if (place >= 0) places.push_back(place);
    }
    std::sort(places.begin(), places.end());
    victims.clear();
    int64_t eater = -1;
    for (const int64_t place : places) {
      const uint32_t j = list[static_cast<size_t>(place)].index;
      const SepObject& o = *objects[j].object;
      const float dx = static_cast<float>(in.mx - o.mx);
      const float dy = static_cast<float>(in.my - o.my);
      float rlim = in.a + o.a;
      rlim *= rlim;
      if (!(dx * dx + dy * dy < rlim * kCleanZone * kCleanZone)) continue;
      if (fdflux[j] < fdflux[i]) {
        if (clean_eats(in, ampin, alphain, beta, dx, dy, o)) victims.push_back(place);  // on the newcomer's menu
      } else {
        double amp, alpha;
        clean_moffat(o, beta, fdflux[j], fdnpix[j], amp, alpha);
        if (clean_eats(o, amp, alpha, beta, dx, dy, in)) {  // the newcomer is eaten
          eater = j;
          break;
        }
      }
    }
    if (eater >= 0) {
      merge(i, static_cast<size_t>(eater));
      continue;
    }
    for (size_t v = victims.size(); v-- > 0;) {  // the newcomer eats its menu, last first
      const size_t place = static_cast<size_t>(victims[v]);
      merge(list[place].index, i);
      remove_at(place);
    }
    Entry e;
    e.index = static_cast<uint32_t>(i);
    clean_extent(in, ymin[i], ymax[i], e);
    position[i] = static_cast<int64_t>(list.size());
    list.push_back(e);
  }
}

}  // namespace imflow::kernels::deblend_detail
