#!/usr/bin/env python3
"""SEP's deblended catalogs and segmentation maps, for tests/test_deblend.cpp ([deblend][sep]),
which runs imflow's kernels::deblend_sources on the same pixels and compares, and for
tests/test_deblend_pipeline_sep.cpp ([sep_deblend]), which runs imflow's whole pipeline (mesh
background, segment, 8-connected label, deblend, measure) on NAME.image.f32 and compares its
label map and catalog with them.

Per image (FITS files given on the command line, and synthetic fields: a crowded star field, a
field of close pairs and triples, galaxies with substructure) it writes, under -o DIR:
  NAME.image.f32, NAME.back.f32, NAME.rms.f32   the pixels (NaN = invalid) and SEP's mesh maps
  NAME.clean.sep_catalog.json, NAME.clean.segmap.i32      sep.extract(..., clean=True)
  NAME.noclean.sep_catalog.json, NAME.noclean.segmap.i32  sep.extract(..., clean=False)
  NAME.global.sep_catalog.json, NAME.global.segmap.i32    err=globalrms (one value), clean=True
  cases.json                                              the cases, SEP's version and timings
Each catalog row has SEP's fields (FIELDS below: positions, moments and their errors, ellipse,
fluxes, flag) and flux_err, sqrt(sum of err^2 over the object's pixels of SEP's segmentation map),
SExtractor's FLUXERR_ISO with gain 0 (SEP has no such column).
with sep.Background(mesh 64, filter 3) and sep.extract(data - back, NSIGMA, err=rms, mask,
minarea=5, filter_kernel=None, deblend_nthresh=32, deblend_cont=0.005, clean_param=1.0,
segmentation_map=True): the detection imflow's segment step does with `relative_to: rms_map`.

Runs with the PATH python3 and installs what it needs there (pip: sep==1.4.1, numpy, astropy);
exits 2 saying so when it cannot.

  python3 tools/compare_sep_deblend.py -o DIR [--nsigma 1.5] [--bench N] [FILE.fits ...]

--bench N adds a crowded N x N field (N = 2048 for the timing in docs/astronomy.md) and reports
sep.extract's time on it (one core, as SEP runs).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sep_background import ensure, fits_images, mesh_background  # noqa: E402

SEP_VERSION = "1.4.1"
FIELDS = ("xmin", "xmax", "ymin", "ymax", "npix", "x", "y", "x2", "y2", "xy", "errx2", "erry2", "errxy",
          "a", "b", "theta", "cxx", "cyy", "cxy", "cflux", "flux", "cpeak", "peak", "thresh", "flag")


def add_stars(np, rng, image, count, amp_range, sigma_range, power=None):
    """Gaussian stars; with `power` the amplitudes follow a power law (many faint, few bright)."""
    h, w = image.shape
    for _ in range(count):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        if power:
            lo, hi = amp_range
            amp = lo * (1 - rng.random()) ** (-1.0 / power)
            amp = min(amp, hi)
        else:
            amp = rng.uniform(*amp_range)
        sx = rng.uniform(*sigma_range)
        sy = sx * rng.uniform(0.7, 1.0)
        angle = rng.uniform(0, np.pi)
        r = int(6 * sx) + 1
        x0, x1 = max(0, int(cx) - r), min(w, int(cx) + r + 1)
        y0, y1 = max(0, int(cy) - r), min(h, int(cy) + r + 1)
        yy, xx = np.mgrid[y0:y1, x0:x1]
        dx, dy = xx - cx, yy - cy
        u = dx * np.cos(angle) + dy * np.sin(angle)
        v = -dx * np.sin(angle) + dy * np.cos(angle)
        image[y0:y1, x0:x1] += amp * np.exp(-0.5 * ((u / sx) ** 2 + (v / sy) ** 2))


def crowded(np, size, seed, density=0.0015):
    rng = np.random.default_rng(seed)
    img = 200.0 + rng.normal(0, 10, (size, size))
    add_stars(np, rng, img, int(density * size * size), (30, 60000), (0.9, 2.5), power=1.2)
    return img.astype(np.float32)


def synthetic_fields(np):
    rng = np.random.default_rng(20240915)
    fields = [("crowded_600", crowded(np, 600, 7))]
    # Close pairs and triples at separations of 3 to 9 pixels, flux ratios 1 to 30.
    img = 50.0 + rng.normal(0, 3, (400, 500))
    for gy in range(6):
        for gx in range(7):
            cx, cy = 35 + gx * 68 + rng.uniform(-3, 3), 35 + gy * 64 + rng.uniform(-3, 3)
            n = 2 + (gx + gy) % 2
            for k in range(n):
                sep_px = rng.uniform(3, 9)
                ang = rng.uniform(0, 2 * np.pi)
                ox, oy = (0, 0) if k == 0 else (sep_px * np.cos(ang), sep_px * np.sin(ang))
                amp = rng.uniform(40, 1200) / (1 if k == 0 else rng.uniform(1, 30))
                sig = rng.uniform(1.0, 2.2)
                yy, xx = np.mgrid[0:400, 0:500]
                img += amp * np.exp(-((xx - cx - ox) ** 2 + (yy - cy - oy) ** 2) / (2 * sig * sig))
    fields.append(("blends_500x400", img.astype(np.float32)))
    # Extended galaxies (exponential discs) with bright knots, and stars around them.
    img = 100.0 + rng.normal(0, 4, (512, 512))
    yy, xx = np.mgrid[0:512, 0:512]
    for _ in range(12):
        cx, cy = rng.uniform(40, 472, 2)
        q, ang, scale = rng.uniform(0.4, 1), rng.uniform(0, np.pi), rng.uniform(4, 14)
        u = (xx - cx) * np.cos(ang) + (yy - cy) * np.sin(ang)
        v = (-(xx - cx) * np.sin(ang) + (yy - cy) * np.cos(ang)) / q
        img += rng.uniform(60, 400) * np.exp(-np.hypot(u, v) / scale)
        for _ in range(rng.integers(1, 5)):
            kx, ky = cx + rng.normal(0, scale), cy + rng.normal(0, scale)
            img += rng.uniform(20, 200) * np.exp(-((xx - kx) ** 2 + (yy - ky) ** 2) / (2 * 1.3 ** 2))
    add_stars(np, rng, img, 150, (20, 3000), (0.9, 1.8))
    fields.append(("galaxies_512", img.astype(np.float32)))
    return fields


def extract(sep, np, sub, err, valid, nsigma, clean, repeat=1):
    seconds = float("inf")
    for _ in range(repeat):  # the best of `repeat` runs
        start = time.perf_counter()
        objects, segmap = sep.extract(sub, nsigma, err=err, mask=~valid, minarea=5, filter_kernel=None,
                                      deblend_nthresh=32, deblend_cont=0.005, clean=clean, clean_param=1.0,
                                      segmentation_map=True)
        seconds = min(seconds, time.perf_counter() - start)
    def value(o, f):  # JSON has no NaN: null
        v = int(o[f]) if f in ("xmin", "xmax", "ymin", "ymax", "npix", "flag") else float(o[f])
        return v if v == v else None
    catalog = [{f: value(o, f) for f in FIELDS} for o in objects]
    variance = np.broadcast_to(np.asarray(err, dtype=np.float64) ** 2, sub.shape)
    sums = np.bincount(segmap.ravel(), weights=variance.ravel(), minlength=len(objects) + 1)
    for index, row in enumerate(catalog):
        row["flux_err"] = float(np.sqrt(sums[index + 1]))
    return catalog, segmap.astype("<i4"), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="FITS files")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--nsigma", type=float, default=1.5)
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--bench", type=int, default=0, help="add a crowded N x N field and time sep.extract on it")
    args = parser.parse_args()

    np = ensure("numpy", "numpy")
    sep = ensure("sep", f"sep=={SEP_VERSION}")
    fits = ensure("astropy.io.fits", "astropy") if args.images else None
    os.makedirs(args.output, exist_ok=True)
    sep.set_sub_object_limit(4096)  # SEP's default 1024 overflows on the crowded fields

    inputs = [] if args.no_synthetic else synthetic_fields(np)
    if args.bench:
        inputs.append((f"crowded_{args.bench}", crowded(np, args.bench, 11, density=0.004)))
    for path in args.images:
        inputs += fits_images(np, fits, path)
    cases = []
    for name, data in inputs:
        valid, clean_data, bkg, back, rms = mesh_background(sep, np, data)
        sub = clean_data - back
        sep.set_extract_pixstack(max(300000, data.size))  # SEP fails on more active pixels
        h, w = data.shape
        for suffix, array in (("image", data), ("back", back), ("rms", rms)):
            array.astype("<f4").tofile(os.path.join(args.output, f"{name}.{suffix}.f32"))
        case = {"name": name, "width": w, "height": h, "nsigma": args.nsigma, "globalrms": float(bkg.globalrms)}
        # The RMS map as err (a threshold per pixel), with and without CLEAN; and the one value
        # globalrms (imflow's relative_to: background) with CLEAN.
        for variant, clean, err in (("clean", True, rms), ("noclean", False, rms), ("global", True, float(bkg.globalrms))):
            catalog, segmap, seconds = extract(sep, np, sub, err, valid, args.nsigma, clean,
                                               repeat=3 if args.bench else 1)
            with open(os.path.join(args.output, f"{name}.{variant}.sep_catalog.json"), "w") as out:
                json.dump(catalog, out)
            segmap.tofile(os.path.join(args.output, f"{name}.{variant}.segmap.i32"))
            blended = sum(1 for o in catalog if o["flag"] & 1)
            case[variant] = {"objects": len(catalog), "blended": blended, "sep_seconds": seconds}
            print(f"{name} {w}x{h} {variant}: {len(catalog)} objects ({blended} blended), "
                  f"sep.extract {seconds:.3f} s")
        if name.startswith("crowded_") and args.bench and name == f"crowded_{args.bench}":
            case["sep_seconds_no_deblend"] = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                plain = sep.extract(sub, args.nsigma, err=rms, mask=~valid, minarea=5, filter_kernel=None,
                                    deblend_nthresh=1, clean=False)  # no tree at all (not deblend_cont=1)
                case["sep_seconds_no_deblend"] = min(case["sep_seconds_no_deblend"], time.perf_counter() - start)
            print(f"{name}: sep.extract without deblending or CLEAN {case['sep_seconds_no_deblend']:.3f} s "
                  f"({len(plain)} objects)")
        cases.append(case)
    with open(os.path.join(args.output, "cases.json"), "w") as out:
        json.dump({"sep_version": sep.__version__, "cases": cases}, out, indent=1)


if __name__ == "__main__":
    main()
