// SExtractor/SEP multi-threshold deblending and CLEAN on a label map, CPU kernel (SEP 1.4.1's
// deblend.c, extract.c and analyse.c, step by step: docs/astronomy.md, "Deblending").
//
// Each segment of the input label map (8-connected components of the pixels above the detection
// threshold) is independent of the others up to CLEAN:
//   1. its pixels in SEP's chain order (the order SEP's Lutz scan links them, which decides where
//      the pseudo-random draws and CLEAN's minarea-th brightest pixel fall);
//   2. the tree of branches over nthresh levels and the split (significance against mincont);
//   3. the pixels below the split levels allocated to the kept branches (a Gaussian model per
//      branch);
//   4. SEP's measurements of the resulting objects (analyse: barycentre, ellipse, abcor).
// Then CLEAN runs once over all objects in SEP's catalog order (or, clean_style sextractor, as
// SExtractor's scan meets them, merging each cleaned object into its survivor) and the surviving
// objects are written as a new label map, numbered in that order. No fixed limit on objects, pixels,
// branches or levels (SEP stops at 1024 branches per level and 300000 pixels).
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/sep_deblend_arith.hpp"  // glibc_rand_r, glibc_rand_r_skip

namespace imflow::kernels {

// How a pixel below the split levels is given to one of the branches that share it. Both use
// SEP's model: branch i has weight A_i exp(-(cxx dx^2 + cyy dy^2 + cxy dx dy) / (2 abcor)).
enum class DeblendAllocation {
  // SEP's draw, with the numbers glibc's rand_r gives from seed 1 in SEP's scan order: the same
  // pixels as sep.extract on Linux (SEP seeds once per extract call; the draws of segment s
  // start where those of the segments before it in scan order ended, found by jumping the
  // generator ahead, so segments stay independent). Measured against SEP 1.4.1 on 13 real and
  // synthetic images (tools/compare_sep_deblend.py): identical segmentation maps and catalogs.
  sep_random,
  // The branch of largest weight (ties: the first in SEP's order). No random numbers, but the
  // blended objects' fluxes differ from SEP's by a median 0.1%, 2-15% at the 90th percentile and
  // up to 48%, and CLEAN then keeps or drops a few objects differently.
  most_probable,
  // SExtractor 2.25's draw: glibc's rand() (random(), TYPE_3) from its default seed, one stream
  // per image in scan order, as source-extractor run on that image alone draws them (SExtractor
  // never seeds it). The same formula as SEP's, so with these numbers the pixels below the split
  // levels go where SExtractor puts them.
  sextractor_random,
};

// How CLEAN treats an object that a brighter neighbour's modelled wings explain.
enum class DeblendCleanStyle {
  // SEP's clean(): once over the final list in catalog order; a cleaned object is dropped (its
  // pixels become background, its flux is lost).
  sep,
  // SExtractor 2.25's clean.c: each object is tested as the scan completes it against the
  // objects still in its CLEAN list, and a cleaned object is merged into the one that explains
  // it (pixels, flux, peak, box, flags); the survivor's grown flux enters its later tests.
  // Objects leave the list as SExtractor's scan releases them (DeblendParams::memory_bufsize,
  // memory_objstack; the detection filter's height shifts the release by its strip margin).
  sextractor,
};

struct DeblendParams {
  int nthresh = 32;          // DEBLEND_NTHRESH: levels between the threshold and the peak (1: no deblending)
  double mincont = 0.005;    // DEBLEND_MINCONT: a branch counts when its flux above its level > mincont x the segment's flux
  bool clean = true;         // CLEAN
  double clean_param = 1.0;  // CLEAN_PARAM: the Moffat beta of the brighter object's profile
  int minarea = 5;           // DETECT_MINAREA: smaller segments are dropped; CLEAN's mthresh is the minarea-th brightest pixel
  DeblendAllocation allocation = DeblendAllocation::sep_random;
  DeblendCleanStyle clean_style = DeblendCleanStyle::sep;
  // The rows SExtractor's scan blanks late behind a detection filter (scan.c's blankh: the
  // filter's height / 2 + 1; 0 without a filter): clean_style sextractor pastes a merged object's
  // pixels back on the line after the later object's last row, so those on the last blank_lag
  // rows before it stay blanked (DeblendInput::detected 2).
  int blank_lag = 0;
  // clean_style sextractor: SExtractor's MEMORY_BUFSIZE (image buffer lines; an image no taller
  // keeps every object in the CLEAN list until the end) and MEMORY_OBJSTACK (CLEAN list size).
  int memory_bufsize = 1024;
  int memory_objstack = 3000;
};

// What sep.extract sees. All arrays are laid out like `detection` (row-major, width x height).
struct DeblendInput {
  // The detection values, background subtracted (filtered when a filter is used): SEP's
  // "cdvalue", data - bkg in float32 for sep.extract(data - bkg, ...). Levels, fluxes, peaks and
  // moments of the deblending use them.
  ConstImageView detection;
  // The unfiltered background-subtracted values (SEP's "value": its dflux, dpeak and the abcor
  // area count); nullptr: `detection` (no filter).
  const float* measurement = nullptr;
  // The detection threshold per pixel (SEP with an err array: float(thresh) * err[i], the float
  // product), or nullptr and the one value `threshold` (SEP's thresh x err for a scalar err, or
  // the absolute thresh without err).
  const float* threshold_map = nullptr;
  float threshold = 0.0f;
  // The segments: labels 1..nlabels, 8-connected (kernels::label_components), 0 elsewhere.
  const int32_t* labels = nullptr;
  int32_t nlabels = 0;
  // The detection's threshold mask (segment's), or nullptr: the pixels of the objects CLEAN
  // removes (dropped or merged into a survivor) are cleared there, as SExtractor pastes them back
  // unblanked, or set to 2 where it blanks them again (DeblendParams::blank_lag), so that the
  // photometry's neighbours (ApertureImage::detected) are SExtractor's.
  uint8_t* detected = nullptr;
};

struct DeblendObject {
  int32_t segment = 0;    // the input label it came from
  bool blended = false;   // from a split (SEP's flag 1 OBJ_MERGED, SExtractor's FLAGS 2)
  // SEP's x, y (0-based): for a blended object the barycentre of its pixels above its split
  // level, which SEP keeps (analyse's "robust" mode) while its other columns use all its
  // pixels; otherwise the detection-weighted barycentre of all its pixels.
  double x = 0.0, y = 0.0;
  // SEP's OBJ_TRUNC (flag 2): the object touches the image edge; for a blended object, its
  // branch (its pixels above its split level) does, as SEP's Lutz scan of the branch flags it:
  // pixels given to it below that level do not count.
  bool truncated = false;
  // SEP's OBJ_SINGU (flag 8): singular moments in SEP's analyse of the object, either of its
  // branch (a blended object's pixels above its split level) or of all its pixels.
  bool singular = false;
  // clean_style sextractor: CLEAN merged other objects into this one (their pixels carry its
  // label). x, y stay its own centre (SExtractor's X_IMAGE: mergeobject keeps the survivor's
  // barycentre), and truncated is or-ed over the merged objects, as SExtractor's flags.
  bool merged = false;
  float thresh = 0.0f;    // SEP's thresh: the mean of the segment's pixel thresholds
  int64_t npix = 0;       // its pixels in the output map
  float flux = 0.0f;      // SEP's cflux: sum of the detection values, float32 as SEP stores it (merged: SExtractor's running sum)
};

struct DeblendResult {
  // Objects 1..n of the output map, in SEP's catalog order (objects[label - 1]).
  std::vector<DeblendObject> objects;
  int64_t segments = 0;          // segments of at least minarea pixels
  int64_t segments_split = 0;    // of them, split into two or more objects
  int64_t objects_cleaned = 0;   // objects CLEAN removed (sep: their pixels are 0 in the output; sextractor: merged)
  int64_t random_draws = 0;      // rand_r calls SEP makes for this image (sep_random)
};

// Deblend and clean every segment; writes `labels_out` (width x height; may not alias
// input.labels): 1..n in SEP's catalog order, 0 for background, segments under minarea and
// cleaned objects. Throws std::invalid_argument on bad parameters.
DeblendResult deblend_sources(const DeblendInput& input, const DeblendParams& params, int32_t* labels_out);

// SEP's scan order of the segments: the order in which its raster (Lutz) scan completes them,
// which is the raster order of each segment's last pixel. Returns labels 1..nlabels in that order
// (labels without pixels left out).
std::vector<int32_t> sep_segment_order(const int32_t* labels, int64_t width, int64_t height, int32_t nlabels);

// The first `count` values of glibc's rand() without srand (seed 1): random()'s additive
// generator, r[i] = r[i - 31] + r[i - 3] (mod 2^32) after 310 discarded steps, each value r >> 1.
void glibc_rand_stream(uint64_t count, std::vector<int32_t>& out);

}  // namespace imflow::kernels
