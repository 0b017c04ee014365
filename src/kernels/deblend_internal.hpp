// The pieces of the deblending kernel (kernels/deblend.hpp) shared by its source files: SEP's
// Lutz scan, one segment's pixels in SEP's chain order, SEP's object measurements (preanalyse,
// analyse, the CLEAN threshold) with SEP's float32/float64 arithmetic, the per-segment split and
// the allocation of the remaining pixels.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "imflow/kernels/deblend.hpp"

namespace imflow::kernels::deblend_detail {

// ---- SEP's Lutz scan (lutz.c): 8-connected components of a window's mask, in the order the
// scan completes them, each with its pixels in the order SEP links them.
struct LutzInfo {
  int64_t pixnb = 0, firstpix = -1, lastpix = -1;
};

struct LutzScratch {
  std::vector<LutzInfo> info, store;
  std::vector<char> marker;
  std::vector<int> psstack;
  std::vector<int64_t> start, end;
  std::vector<int64_t> pixel, next;  // per scanned pixel: window index, link in its chain
};

struct Components {
  std::vector<int64_t> pixels;   // window indices (y * width + x), component after component
  std::vector<int64_t> offsets;  // component c holds pixels[offsets[c], offsets[c + 1])
  size_t size() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

// Components of mask (width x height, non-zero = on) with at least min_pixels pixels.
void lutz_scan(const uint8_t* mask, int64_t width, int64_t height, int64_t min_pixels, LutzScratch& scratch,
               Components& out);

// ---- One segment: its pixels in SEP's chain order, coordinates relative to its bounding box.
struct SegmentPixels {
  int32_t label = 0;
  int64_t x0 = 0, y0 = 0, width = 0, height = 0;  // bounding box
  std::vector<int32_t> x, y;                       // relative to (x0, y0)
  std::vector<float> cd, value, thresh;            // detection, measurement, threshold
  std::vector<int32_t> submap;                     // width x height: pixel index or -1
  float thresh0 = 0.0f;                            // SEP's get_mean_thresh (clean_style sextractor: the minimum)
  // clean_style sextractor with a threshold per pixel (SExtractor's detection weighting,
  // prefs.dweight_flag): SExtractor's preanalyse sets every abcor to 1 (scan.c: abcor is computed
  // only when `t1t2 > 0.0 && !prefs.dweight_flag`), which gatherup's model (refine.c: amp, dist)
  // and CLEAN's amplitude (clean.c: ampin, amp) divide by; and sortit's preanalyse gives each
  // final object the lowest threshold of its own pixels as dthresh (PLISTEXIST(dthresh)), which
  // CLEAN's alpha divides by.
  bool sextractor_weighted = false;
  int64_t size() const { return static_cast<int64_t>(x.size()); }
};

// Fill `segment` for label `label` with bounding box (x0, y0, w, h).
void gather_segment(const DeblendInput& input, int32_t label, int64_t x0, int64_t y0, int64_t w, int64_t h,
                    LutzScratch& scratch, SegmentPixels& segment);

// ---- SEP's objstruct fields that deblending and CLEAN use, computed as SEP computes them.
struct SepObject {
  float thresh = 0.0f, mthresh = 0.0f;
  int64_t fdnpix = 0, dnpix = 0;
  double mx = 0.0, my = 0.0;                       // barycentre, absolute (image) coordinates
  int64_t xmin = 0, xmax = 0, ymin = 0, ymax = 0;  // relative to the segment's box
  double mx2 = 0.0, my2 = 0.0, mxy = 0.0;
  float a = 0.0f, b = 0.0f, theta = 0.0f, abcor = 0.0f, cxx = 0.0f, cyy = 0.0f, cxy = 0.0f;
  float fdflux = 0.0f, fdpeak = 0.0f, dpeak = 0.0f;
  double dflux = 0.0;
  bool merged = false;
  bool singular = false;  // SEP's OBJ_SINGU: some analyse of it found singular moments (flags are or-ed)
};

// preanalyse over pixels idx[0..n) (indices into the segment, in chain order).
void sep_preanalyse(const SegmentPixels& s, const int32_t* idx, int64_t n, SepObject& o);
// analyse (without the error terms); robust: keep a merged object's mx, my (absolute) as centre.
void sep_analyse(const SegmentPixels& s, const int32_t* idx, int64_t n, bool robust, SepObject& o);
// analysemthresh: SEP's heap over (detection - threshold), quirks included.
float sep_mthresh(const SegmentPixels& s, const int32_t* idx, int64_t n, int minarea);

// ---- The split of one segment (deblend.c's tree and cut): the kept branches in SEP's order,
// each its pixels in chain order (indices into the segment). Empty: no split.
struct SegmentSplit {
  std::vector<std::vector<int32_t>> branches;
  std::vector<float> levels;  // each branch's level
};

// The tree's working storage. A branch: its pixels (a range of its level's pool, chain order), its
// measurements (preanalyse, thresh = the node's level) and its sons (a range of the next level).
struct TreeNode {
  int64_t first_pixel = 0, pixels = 0;
  SepObject object;
  int64_t first_son = 0, sons = 0;
  uint8_t ok = 1;
};
struct TreeLevel {
  std::vector<TreeNode> nodes;
  std::vector<int32_t> pool;  // the nodes' pixels (indices into the segment), node after node
  const int32_t* pixels_of(const TreeNode& node) const { return pool.data() + node.first_pixel; }
};

// What a run of segments on one thread reuses from segment to segment (a crowded field has tens of
// thousands, each with up to nthresh levels): the Lutz scan's and the tree's storage.
struct SegmentScratch {
  LutzScratch lutz;
  std::vector<TreeLevel> levels;
  std::vector<uint8_t> mask;
  std::vector<float> box_values;  // the segment's box: detection values, -inf outside the segment
  std::vector<int32_t> stamp;  // per segment pixel: the parent it was last seen in
  Components components;
};
void split_segment(const SegmentPixels& s, const DeblendParams& params, SegmentScratch& scratch, SegmentSplit& split);

// ---- The allocation of the pixels of a split segment outside its branches (gatherup).
// The model: each branch measured on its own pixels (analyse at its level), its amplitude, and
// which pixels of the segment the branches hold; `draws`: the rand_r calls SEP makes for it.
struct GatherModel {
  std::vector<SepObject> branches;
  std::vector<float> amp;
  std::vector<uint8_t> in_branch;  // per segment pixel
  int64_t draws = 0;
};
void gather_model(const SegmentPixels& s, const SegmentSplit& split, GatherModel& model);

struct SegmentObjects {
  std::vector<std::vector<int32_t>> pixels;  // per object: indices into the segment, in SEP's chain order
  std::vector<SepObject> measured;           // per object: SEP's final analyse
  std::vector<size_t> branch_sizes;          // per object: the first pixels that are its branch (all when not split)
  bool blended = false;
};
// The objects of the segment (one when it was not split), measured as SEP's sortit does;
// `seed`: the rand_r state before this segment's draws (sep_random).
// `stream`: sextractor_random's numbers for this segment (glibc_rand_stream, from its first draw).
void allocate_segment(const SegmentPixels& s, SegmentSplit& split, const GatherModel& model, DeblendAllocation mode,
                      uint32_t seed, const int32_t* stream, SegmentObjects& objects);

// ---- CLEAN's test, the same in SEP's extract.c and SExtractor's clean.c: the brighter object
// as a Moffat profile of beta = clean_param, its amplitude and alpha ...
constexpr double kCleanZone = 10.0;
inline void clean_moffat(const SepObject& o, double beta, float fdflux, int64_t fdnpix, double& amp, double& alpha) {
  const double unitarea = 3.14159265358979323846 * o.a * o.b;
  amp = fdflux / (2 * unitarea * o.abcor);
  alpha = (std::pow(amp / o.thresh, 1.0 / beta) - 1) * unitarea / static_cast<double>(fdnpix);
}
// ... and whether the profile (amp, alpha) of `big` at offset (dx, dy) exceeds small's mthresh.
inline bool clean_eats(const SepObject& big, double amp, double alpha, double beta, float dx, float dy,
                       const SepObject& small) {
  const double val = 1 + alpha * (big.cxx * dx * dx + big.cyy * dy * dy + big.cxy * dx * dy);
  return val > 1.0 && static_cast<float>(val < 1e10 ? amp * std::pow(val, -beta) : 0.0) > small.mthresh;
}

// The pairs CLEAN may compare: for each i, the j > i (ascending) whose squares of half-side
// 10 a + 1 around their centres overlap i's, a superset of the pairs within 10 (a_i + a_j); an
// object with a non-finite a or centre meets everyone (SEP's and SExtractor's test never skip
// it). later[offsets[i] .. offsets[i + 1]).
void clean_candidates(const std::vector<const SepObject*>& objects, std::vector<int64_t>& offsets,
                      std::vector<uint32_t>& later);

// ---- CLEAN over the final list (extract.c's clean): survives[i] = 0 for cleaned objects.
void sep_clean(const std::vector<const SepObject*>& objects, double clean_param, std::vector<uint8_t>& survives);

// ---- SExtractor's CLEAN (clean.c, scan.c), objects in SEP's catalog order (= the order
// SExtractor's scan completes them): ymin, ymax the object's rows and last_row its segment's
// last row (image coordinates). eaten_by[i]: the object i was merged into (-1: none; follow the
// chain to the survivor); fdflux[i]: its flux after the merges (SExtractor's running fdflux).
struct SextractorCleanObject {
  const SepObject* object = nullptr;
  int64_t ymin = 0, ymax = 0, last_row = 0;
};
// buffer_lines, object_stack: MEMORY_BUFSIZE, MEMORY_OBJSTACK; strip_margin: field.c's
// stripmargin (1, or the detection filter's height / 2 + 1 when larger).
void sextractor_clean(const std::vector<SextractorCleanObject>& objects, int64_t image_height, double clean_param,
                      int64_t buffer_lines, size_t object_stack, int64_t strip_margin,
                      std::vector<int32_t>& eaten_by, std::vector<float>& fdflux);

}  // namespace imflow::kernels::deblend_detail
