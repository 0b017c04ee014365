#!/usr/bin/python3
"""make_reference.py - independent NumPy/SciPy reference for imflow's "seed lesson"
pipeline (the Carpentries GPU programming lesson's astronomy example:
kappa-sigma clipped background, threshold, connected-component labelling,
per-source centre of mass / flux / peak / bounding box).

Run with Debian's /usr/bin/python3 (needs numpy, scipy, astropy).

usage: make_reference.py [--kappa 3] [--max-iters 100] [--nsigma 5]
                         [--relative-to background|zero] [--connectivity 4|8]
                         [--hdu N] [--plane P]
                         [--convolve-out OUT.fits [--kernel lesson|gaussian:SIZE:SIGMA]
                                                  [--mode same|full]]
                         FITS [FITS ...] -o OUT.json

Input
  Every image HDU with NAXIS >= 2 is processed (hdu index 0-based as in
  astropy; a cube is split into 2-D planes along the slowest axis, plane index
  0-based; NAXIS > 3 is flattened over the leading axes). --hdu / --plane pick
  one HDU / plane. Pixels are read as the physical values BSCALE*raw+BZERO
  (computed in float64; integer pixels equal to BLANK become NaN), rounded to
  float32 (imflow works on float32 pixels) and then promoted to float64 for
  every computation below. Tile-compressed HDUs are decoded by astropy.

Algorithm (all float64)
  background: kappa-sigma clipping exactly as in the lesson.
      d = finite pixels (NaN/Inf dropped), flattened
      loop:
          med = np.median(d); std = np.std(d)        (ddof = 0)
          iterations += 1
          keep = d[(d > med - kappa*std) & (d < med + kappa*std)]   (strict)
          stop if keep.size == d.size        (nothing clipped)
          stop if iterations == max_iters
          stop if std == 0                   (guard: the strict test would
                                              clip everything, e.g. a constant
                                              image; the lesson would then take
                                              the median of an empty array)
          d = keep
      iterations = number of passes that computed median and std, including
                   the final pass that clipped nothing.
      median, std = the values computed in the last pass; kept = size of the
                   set they were computed on (the final kept set).
  threshold: med + nsigma*std   (--relative-to background, default)
             nsigma*std          (--relative-to zero: the lesson's data > 5*std)
  segmentation: mask = data > threshold (strict); non-finite pixels (NaN and
          +/-Inf, which were also dropped from the background) are never in
          the mask.
  labels: scipy.ndimage.label(mask, structure) with the default 4-connected
          cross (--connectivity 4) or np.ones((3,3)) (--connectivity 8).
          Label ids 1..n are in SciPy's order (raster scan order of the first
          pixel of each component).
  per source (id = label):
      x, y      scipy.ndimage.center_of_mass(data, labels, id) -> (y, x), 0-based
      flux      scipy.ndimage.sum_labels(data, labels, id)
      npix      number of pixels with that label
      peak      scipy.ndimage.maximum(data, labels, id)
      peak_x, peak_y  scipy.ndimage.maximum_position (first maximum in raster
                order when tied; peak_count gives the number of tied pixels)
      xmin, xmax, ymin, ymax  from scipy.ndimage.find_objects, inclusive, 0-based

Convolution reference (--convolve-out FILE.fits)
  Writes scipy.signal.convolve2d(img, kernel, mode, boundary='fill',
  fillvalue=0) as float64 FITS for every processed image plane (HDU i = item i,
  EXTNAME CONV, with SRCFILE/SRCHDU/SRCPLANE cards) followed by the kernel
  itself (EXTNAME KERNEL). NaN pixels propagate.
  --kernel lesson (default): exactly the lesson's kernel, NOT normalised,
      coordinates spanning [-2, 2] in 15 samples:
          x, y = np.meshgrid(np.linspace(-2, 2, 15), np.linspace(-2, 2, 15))
          dst = np.sqrt(x*x + y*y); sigma = 1; muu = 0.000
          gauss = np.exp(-((dst - muu)**2 / (2.0 * sigma**2)))
  --kernel gaussian:SIZE:SIGMA: SIZExSIZE kernel at pixel offsets
      -(SIZE//2)..SIZE//2, exp(-r^2 / (2 SIGMA^2)), normalised to sum 1.
  --mode same (default) | full.

Output JSON
  {"generator", "numpy", "scipy", "astropy", "params": {...},
   "images": [{"file", "hdu", "plane", "width", "height",
               "background": {"median", "std", "iterations", "kept"},
               "threshold", "nsources",
               "sources": [{"id", "x", "y", "flux", "npix", "peak", "peak_x",
                            "peak_y", "peak_count", "xmin", "xmax", "ymin",
                            "ymax"}, ...]}, ...]}
  Floats are written at full double precision (repr); NaN is written as null
  (e.g. x/y of a source whose flux sums to exactly 0, possible only when the
  threshold is negative; median/std/threshold of an all-NaN image).
"""
import argparse
import json
import math
import os
import sys

import astropy
import numpy as np
import scipy
from astropy.io import fits
from scipy import ndimage, signal

ITERATIONS_DEF = ("number of passes that computed median and std, including the "
                  "final pass that clipped nothing (or hit max_iters / std == 0)")


def physical_pixels(hdu):
    """float32 physical pixel values of an uncompressed HDU opened with
    do_not_scale_image_data=True (BSCALE/BZERO applied in float64, BLANK->NaN)."""
    raw = np.asarray(hdu.data)
    h = hdu.header
    bscale = float(h.get("BSCALE", 1.0))
    bzero = float(h.get("BZERO", 0.0))
    val = raw.astype(np.float64)
    if bscale != 1.0 or bzero != 0.0:
        val = val * bscale + bzero
    if raw.dtype.kind in "iu" and "BLANK" in h:
        val[raw == int(h["BLANK"])] = np.nan
    return val.astype(np.float32)


def iter_images(path, hdu_sel, plane_sel):
    """Yield (hdu_index, plane_index, float64 2-D array)."""
    with fits.open(path, do_not_scale_image_data=True) as hdul:
        scaled = None
        for i, hdu in enumerate(hdul):
            if hdu_sel is not None and i != hdu_sel:
                continue
            if not hdu.is_image or hdu.header.get("NAXIS", 0) < 2 or hdu.data is None:
                if hdu_sel is not None:
                    sys.exit(f"{path}: HDU {i} is not an image with NAXIS >= 2")
                continue
            if isinstance(hdu, fits.CompImageHDU):
                if scaled is None:
                    scaled = fits.open(path)   # let astropy decode + scale
                arr = np.asarray(scaled[i].data, dtype=np.float32)
            else:
                arr = physical_pixels(hdu)
            arr = arr.reshape((-1,) + arr.shape[-2:])
            for p in range(arr.shape[0]):
                if plane_sel is not None and p != plane_sel:
                    continue
                yield i, p, arr[p].astype(np.float64)
        if scaled is not None:
            scaled.close()


def kappa_sigma(data, kappa, max_iters):
    d = data[np.isfinite(data)].ravel()
    if d.size == 0:
        return math.nan, math.nan, 0, 0
    iterations = 0
    while True:
        med = np.median(d)
        std = np.std(d)
        iterations += 1
        keep = d[(d > med - kappa * std) & (d < med + kappa * std)]
        if keep.size == d.size or iterations >= max_iters or std == 0:
            return float(med), float(std), iterations, int(d.size)
        d = keep


def analyse(data, args):
    med, std, iters, kept = kappa_sigma(data, args.kappa, args.max_iters)
    if args.relative_to == "background":
        thr = med + args.nsigma * std
    else:
        thr = args.nsigma * std
    mask = np.zeros(data.shape, dtype=bool)
    if not math.isnan(thr):
        with np.errstate(invalid="ignore"):
            mask = np.isfinite(data) & (data > thr)   # NaN/Inf never in a source
    structure = np.ones((3, 3), dtype=int) if args.connectivity == 8 else None
    labels, n = ndimage.label(mask, structure=structure)
    sources = []
    if n:
        idx = np.arange(1, n + 1)
        with np.errstate(invalid="ignore", divide="ignore"):  # zero-flux source -> NaN
            com = ndimage.center_of_mass(data, labels, idx)
        flux = ndimage.sum_labels(data, labels, idx)
        npix = np.bincount(labels.ravel(), minlength=n + 1)[1:]
        peak = ndimage.maximum(data, labels, idx)
        ppos = ndimage.maximum_position(data, labels, idx)
        objs = ndimage.find_objects(labels)
        for k in range(n):
            sl = objs[k]
            pk = float(peak[k])
            sources.append({
                "id": k + 1,
                "x": float(com[k][1]), "y": float(com[k][0]),
                "flux": float(flux[k]), "npix": int(npix[k]),
                "peak": pk, "peak_x": int(ppos[k][1]), "peak_y": int(ppos[k][0]),
                "peak_count": int(np.count_nonzero((labels[sl] == k + 1) & (data[sl] == pk))),
                "xmin": sl[1].start, "xmax": sl[1].stop - 1,
                "ymin": sl[0].start, "ymax": sl[0].stop - 1,
            })
    return {
        "background": {"median": med, "std": std, "iterations": iters, "kept": kept},
        "threshold": thr, "nsources": n, "sources": sources,
    }


def make_kernel(spec):
    if spec == "lesson":
        x, y = np.meshgrid(np.linspace(-2, 2, 15), np.linspace(-2, 2, 15))
        dst = np.sqrt(x * x + y * y)
        sigma = 1
        muu = 0.000
        return np.exp(-((dst - muu) ** 2 / (2.0 * sigma ** 2)))
    parts = spec.split(":")
    if len(parts) != 3 or parts[0] != "gaussian":
        sys.exit(f"bad --kernel {spec!r}: use 'lesson' or 'gaussian:SIZE:SIGMA'")
    size, sigma = int(parts[1]), float(parts[2])
    off = np.arange(size) - size // 2
    x, y = np.meshgrid(off, off)
    g = np.exp(-(x * x + y * y) / (2.0 * sigma * sigma))
    return g / g.sum()


def nan_to_none(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: nan_to_none(v) for k, v in o.items()}
    if isinstance(o, list):
        return [nan_to_none(v) for v in o]
    return o


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="FITS")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.json")
    ap.add_argument("--kappa", type=float, default=3.0)
    ap.add_argument("--max-iters", type=int, default=100)
    ap.add_argument("--nsigma", type=float, default=5.0)
    ap.add_argument("--relative-to", choices=["background", "zero"], default="background")
    ap.add_argument("--connectivity", type=int, choices=[4, 8], default=4)
    ap.add_argument("--hdu", type=int)
    ap.add_argument("--plane", type=int)
    ap.add_argument("--convolve-out", metavar="FILE.fits")
    ap.add_argument("--kernel", default="lesson")
    ap.add_argument("--mode", choices=["same", "full"], default="same")
    args = ap.parse_args()

    kernel = make_kernel(args.kernel) if args.convolve_out else None
    conv_hdus = []
    images = []
    for path in args.files:
        for hdu_i, plane, data in iter_images(path, args.hdu, args.plane):
            item = {"file": os.path.basename(path), "hdu": hdu_i, "plane": plane,
                    "width": int(data.shape[1]), "height": int(data.shape[0])}
            item.update(analyse(data, args))
            images.append(item)
            if kernel is not None:
                conv = signal.convolve2d(data, kernel, mode=args.mode,
                                         boundary="fill", fillvalue=0)
                h = fits.ImageHDU(conv.astype(np.float64), name="CONV")
                h.header["SRCFILE"] = os.path.basename(path)
                h.header["SRCHDU"] = hdu_i
                h.header["SRCPLANE"] = plane
                h.header["KERNEL"] = args.kernel
                h.header["CONVMODE"] = args.mode
                conv_hdus.append(h)
    if not images:
        sys.exit("no image HDU/plane matched")

    out = {
        "generator": "tools/make_reference.py",
        "numpy": np.__version__, "scipy": scipy.__version__, "astropy": astropy.__version__,
        "params": {"kappa": args.kappa, "max_iters": args.max_iters, "nsigma": args.nsigma,
                   "relative_to": args.relative_to, "connectivity": args.connectivity,
                   "hdu": args.hdu, "plane": args.plane,
                   "pixels": "physical values rounded to float32, computed in float64",
                   "iterations": ITERATIONS_DEF,
                   "threshold": "median + nsigma*std" if args.relative_to == "background"
                                else "nsigma*std",
                   "segmentation": "data > threshold (strict), NaN/Inf pixels excluded",
                   "coordinates": "0-based pixel indices, x = column (FITS axis 1), y = row"},
        "images": images,
    }
    with open(args.output, "w") as f:
        json.dump(nan_to_none(out), f, indent=1, allow_nan=False)
        f.write("\n")

    if kernel is not None:
        first = conv_hdus[0]
        hdul = fits.HDUList([fits.PrimaryHDU(first.data, header=first.header)] + conv_hdus[1:]
                            + [fits.ImageHDU(kernel, name="KERNEL")])
        hdul[0].header["EXTNAME"] = "CONV"
        hdul.writeto(args.convolve_out, overwrite=True)

    for it in images:
        b = it["background"]
        print(f"{it['file']} hdu {it['hdu']} plane {it['plane']} {it['width']}x{it['height']}: "
              f"median {b['median']:.6g} std {b['std']:.6g} iters {b['iterations']} "
              f"kept {b['kept']} threshold {it['threshold']:.6g} nsources {it['nsources']}")


if __name__ == "__main__":
    main()
