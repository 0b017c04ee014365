// Aperture photometry with SEP 1.4.1's definitions (sep.sum_circle, sum_circann, sum_ellipse,
// sum_ellipann, kron_radius, flux_radius, winpos) and its FLUX_AUTO recipe: plain data in, plain
// results out, one object per call, compiled for the host and the device (cuda/photometry.cu), so
// the CPU, the CUDA twin and the bindings share the definitions. Each is a template over who
// walks the pixels (pixel_team.hpp): one thread by default, a GPU warp in the CUDA twin.
// Coordinates are 0-based: (0, 0) is the centre of the first pixel (SEP's convention; SExtractor's
// X_IMAGE is x + 1). Geometry and flags: imflow/kernels/aperture_geometry.hpp.
#pragma once
#include <cstdint>
#include <span>

#include "imflow/image.hpp"
#include "imflow/kernels/aperture_geometry.hpp"
#include "imflow/kernels/pixel_team.hpp"

namespace imflow::kernels {

// What the noise arrays or value mean (SEP's err= or var=).
enum class NoiseKind { none, stddev, variance };

// The image and its optional companions; every array has the data's width and height.
struct ApertureImage {
  ConstImageView data;
  const float* noise = nullptr;      // per-pixel err or var (noise_kind), or nullptr
  double noise_value = 0.0;          // the one err or var used when noise is nullptr
  NoiseKind noise_kind = NoiseKind::none;
  const float* mask = nullptr;       // a pixel is masked when mask > mask_threshold
  double mask_threshold = 0.0;
  double gain = 0.0;                 // e-/ADU; > 0 adds the sum's Poisson variance sum / gain
  // SEP's segmentation map (ids as float32, as SEP reads them) and the object's seg_id: with
  // seg_id > 0 the pixels of other objects (id > 0, != seg_id) are masked, otherwise every pixel
  // whose id is not -seg_id. Unlike `mask`, these pixels are dropped without the area correction.
  const float* segmap = nullptr;
  double seg_id = 0.0;

  // Whether pixel `at` is masked by `mask` or by the segmentation map.
  IMFLOW_HOST_DEVICE bool masked(int64_t at) const {
    if (mask != nullptr && mask[at] > mask_threshold) return true;
    if (segmap == nullptr) return false;
    const double id = segmap[at];
    return seg_id > 0.0 ? (id > 0.0 && id != seg_id) : id != -seg_id;
  }
  // Neighbours (SExtractor's MASK_TYPE CORRECT), off when `neighbours` is nullptr: a pixel whose
  // label there (int32, 0 = background) is neither 0 nor neighbour_id is another object's. The
  // sums, flux_radius and winpos read the pixel symmetric about (mirror_x, mirror_y) instead,
  // SExtractor's (int)(2 x + 0.49999 - ix), or 0 when that one is outside the image, masked or
  // another object's too; kron_radius leaves it out. Such pixels set no flag. With `detected`
  // (uint8, the detection's threshold mask as deblend leaves it: DeblendInput::detected) the other
  // objects' pixels are SExtractor's blanked ones: every detected pixel (1) whose label is not
  // neighbour_id, detections under minarea (label 0) included, every pixel marked 2 (those of
  // merged objects SExtractor blanks again, whatever their label), and no other (the pixels
  // CLEAN removed, which SExtractor pastes back).
  const int32_t* neighbours = nullptr;
  const uint8_t* detected = nullptr;
  int32_t neighbour_id = 0;
  double mirror_x = 0.0, mirror_y = 0.0;
};

// Whether pixel `at` is another object's for object `own` (ApertureImage::neighbours): off without
// `labels`; with `detected`, a pixel detected (1) and not labelled `own`, or blanked for all (2);
// else a label neither 0 nor `own`.
IMFLOW_HOST_DEVICE inline bool blanked_pixel(const int32_t* labels, const uint8_t* detected, int32_t own, int64_t at) {
  if (labels == nullptr) return false;
  if (detected != nullptr) return detected[at] == 2 || (detected[at] == 1 && labels[at] != own);
  return labels[at] != 0 && labels[at] != own;
}

// How masked pixels enter a sum: `correct` scales the sum and variance by total area / unmasked
// area (masked pixels take the aperture's mean, SEP's default); `ignore` drops them and their area
// (SEP_MASK_IGNORE, what its background annuli use).
enum class MaskMode { correct, ignore };

struct ApertureSum {
  double sum = 0.0;
  double error = 0.0;  // sqrt(sum of pixel variances x overlap [+ sum / gain]); 0 without noise or gain
  double area = 0.0;   // pixels x overlap within the aperture, masked ones included unless `ignore`
  int32_t flag = 0;    // kAperTrunc, kAperHasMasked
  // The part of `area` on masked pixels and on other objects' (ApertureImage::neighbours), which
  // SExtractor counts as blanked (its areab); `ignore` leaves the masked ones out of both.
  double blanked_area = 0.0;
};

// Sums over the aperture; subpix = 0 weighs each pixel by its exact overlap, subpix = N by the
// fraction of N x N points inside (pixels wholly inside or outside count 1 or 0 without sampling).
// Invalid parameters (r < 0, rout < rin, b < 0, a < b, |theta| > pi/2, subpix < 0) give NaN sums.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_circle(const ApertureImage& image, double x, double y, double r,
                                                 int subpix = 5, MaskMode mode = MaskMode::correct);
// sum_circle as SExtractor's computeaperflux samples it (photom.c): centre, offsets and the
// subpix x subpix test in float, pixels within r - 0.75 whole, beyond r + 0.75 skipped; subpix >= 1.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_circle_sextractor(const ApertureImage& image, double x, double y, double r,
                                                     int subpix = 5, MaskMode mode = MaskMode::correct);
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_circann(const ApertureImage& image, double x, double y, double rin,
                                                  double rout, int subpix = 5, MaskMode mode = MaskMode::correct);
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_ellipse(const ApertureImage& image, double x, double y, double a, double b,
                                                  double theta, double r, int subpix = 5,
                                                  MaskMode mode = MaskMode::correct);
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_ellipann(const ApertureImage& image, double x, double y, double a, double b,
                                                   double theta, double rin, double rout, int subpix = 5,
                                                   MaskMode mode = MaskMode::correct);

// sep.sum_circle(..., bkgann=(rin, rout)): the circle's sum minus the mean of the annulus
// (summed at subpix 1 with masked pixels ignored) times the circle's area; the annulus's error,
// scaled likewise, adds in quadrature; the flag is the circle's. An annulus without valid pixels
// (SEP raises) gives NaN sum and error.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_circle_bkgann(const ApertureImage& image, double x, double y, double r,
                                                        double rin, double rout, int subpix = 5);
// sep.sum_ellipse(..., bkgann=(rin, rout)): the same with the elliptical annulus rin..rout (in
// units of a, b), which SEP sums at the ellipse's subpix with masked pixels corrected, not ignored.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE ApertureSum sum_ellipse_bkgann(const ApertureImage& image, double x, double y, double a,
                                                         double b, double theta, double r, double rin, double rout,
                                                         int subpix = 5);

// sep.kron_radius with SEP's cxx, cyy, cxy: sum r I / sum I over the pixels whose centres have
// r = sqrt(cxx dx^2 + cyy dy^2 + cxy dx dy) <= r_max (6 in the recipe), masked pixels (and values
// below -1e30) left out. 0 with kAperAllMasked when no pixel counts, 0 with kAperNonPositive when
// either sum is <= 0. Noise and gain are not used. `pixels` counts the pixels of the image within
// r_max and `blanked` those of them that are masked, below -1e30 or other objects' (SExtractor's
// area and areab in computeautoflux's first step).
struct KronRadius {
  double radius = 0.0;          // r1 / v1 where both are positive, else 0 with a flag
  double r1 = 0.0, v1 = 0.0;    // sum of r I and of I over the pixels counted
  int32_t flag = 0;
  int64_t pixels = 0, blanked = 0;
};
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE KronRadius kron_radius(const ApertureImage& image, double x, double y, double cxx, double cyy,
                                                 double cxy, double r_max);

// sep.flux_radius: the radii of the circles holding fractions `fractions` of `normflux` (of the
// sum within rmax when normflux is NaN), from 64 annuli out to rmax (pixels near an annulus
// boundary sampled subpix x subpix, subpix >= 1) interpolated linearly; masked pixels corrected
// per annulus. `radii` has one entry per fraction. Returns the flag (kAperTrunc when the box to
// rmax + 1.5 leaves the image, kAperHasMasked). Noise and gain are not used.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE int32_t flux_radius(const ApertureImage& image, double x, double y, double rmax,
                                              std::span<const double> fractions, double normflux, int subpix,
                                              std::span<double> radii);

// sep.winpos: SExtractor's XWIN/YWIN. From (x, y), up to 16 steps of x += 2 sum w I dx / sum w I,
// w = exp(-r^2 / (2 sig^2)) over the circle r < 4 sig (boundary pixels weighed by their overlap,
// subpix as above, 0 = exact), masked pixels replaced by the aperture's mean value; stops when a
// step is under 1e-4 px or sum w I <= 0. sig below min_sig (SEP's 2 / 2.35 x 0.5) is raised to it.
// Besides the position, SExtractor's windowed measurements (compute_winpos in its winpos.c) from
// the sums of the last step, taken about the position before that step with w x overlap as the
// weight of a pixel: flux = sum w I (FLUX_WIN) and flux_var = sum (w x overlap)^2 var (its error
// squared; var = the noise's variance + I / gain for I > 0, masked pixels their variance alone,
// none when it is infinite: a weight map's bad pixel; with weight_gain_noise2 > 0, SExtractor's
// WEIGHT_GAIN, the I / gain term scaled by the pixel's variance / weight_gain_noise2),
// the moments x2 = sum w I dx^2 / flux - step^2 ... (X2WIN_IMAGE.., before any correction) and the
// position's covariance errx2 = 4 sum (w x overlap)^2 var (dx^2 + 0.0833) / flux^2 ... (ERRX2WIN..,
// before SExtractor's singular-case term, errsum = 4 x 0.08333 flux_var / flux^2).
struct WindowedPosition {
  double x = 0.0, y = 0.0;
  int iterations = 0;
  int32_t flag = 0;
  double flux = 0.0, flux_var = 0.0;
  double x2 = 0.0, y2 = 0.0, xy = 0.0;
  double errx2 = 0.0, erry2 = 0.0, errxy = 0.0, errsum = 0.0;
};
inline constexpr double kWinposMinSig = 2.0 / 2.35 * 0.5;
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE WindowedPosition winpos(const ApertureImage& image, double x, double y, double sig,
                                           int subpix = 11, double min_sig = kWinposMinSig,
                                           double weight_gain_noise2 = 0.0);

// SEP's documented FLUX_AUTO (SExtractor's PHOT_AUTOPARAMS 2.5, 3.5) for one catalog row:
// kron_radius within kron_r_max (6) x the ellipse (a, b, theta); the sum in the ellipse at
// kron_factor (2.5) x that radius, pixel centres only (subpix 1), its flag or-ed with the Kron
// flag; when kron_radius x sqrt(a b) < min_radius (1.75, diameter 3.5) the circle of min_radius
// (subpix 1) instead, with the circle's flag alone. `image`'s noise and gain give the error.
// `crowded` is SExtractor's OBJ_CROWDED (FLAGS 1, computeautoflux): more than 10% of the pixels
// within kron_r_max, or of those the flux sums, are blanked (masked, or other objects' with
// ApertureImage::neighbours), compared in SExtractor's float arithmetic; SEP has no such flag.
struct AutoFlux {
  double kron_radius = 0.0;
  double flux = 0.0, flux_err = 0.0;
  int32_t flag = 0;
  bool circular = false;  // the min_radius circle was used
  bool crowded = false;
};
struct AutoParams {
  double kron_factor = 2.5;
  double min_radius = 1.75;
  double kron_r_max = 6.0;
  // SExtractor's minimum Kron radius (PHOT_AUTOPARAMS' second value, 3.5 there; 0 in SEP's
  // recipe): kron_radius is raised to min_kron_radius / kron_factor where kron_factor x
  // kron_radius falls below it (a Kron radius of 0, from a flag, too).
  double min_kron_radius = 0.0;
  // SExtractor 2.25's float arithmetic (computeautoflux) for which pixels the Kron radius and
  // the flux count; false: SEP's double arithmetic (sep.kron_radius, sep.sum_ellipse).
  bool sextractor_arithmetic = false;
};
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE AutoFlux auto_flux(const ApertureImage& image, double x, double y, double a, double b,
                                             double theta, const AutoParams& params = {});

}  // namespace imflow::kernels

// The definitions (host and device).
#include "imflow/kernels/aperture_flux_radius.hpp"
#include "imflow/kernels/aperture_kron.hpp"
#include "imflow/kernels/aperture_sum.hpp"
#include "imflow/kernels/aperture_winpos.hpp"
