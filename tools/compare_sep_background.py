#!/usr/bin/env python3
"""SEP's mesh background (sep.Background: .back(), .rms(), globalback, globalrms) on real FITS
images and synthetic fields, written as raw float32 files for tests/test_background_mesh.cpp,
which runs imflow's kernels::mesh_background on the same pixels and compares (ctest sep_background).
With --extract NSIGMA also SEP's catalog per image, sep.extract(data - back, NSIGMA, err=rms, gain=2.5,
mask, minarea=1, filter_kernel=None, deblend_cont=1.0 (no deblending), clean=False), as
NAME.sep_catalog.json for tests/test_measure_sep.cpp (imflow's background + segment + label +
measure on the same pixels).

Runs with the PATH python3 and installs what it needs there (pip: sep==1.4.1, numpy, astropy).
If the install fails it exits 2 saying so: the test then fails, it never skips.

  python3 tools/compare_sep_background.py -o DIR [--mesh 64] [--filter 3] [--extract 1.5] FILE.fits ...
"""
import argparse
import importlib
import json
import os
import subprocess
import sys

SEP_VERSION = "1.4.1"  # the background.c that src/kernels/background_mesh.cpp follows


def ensure(module, requirement):
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", requirement],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.exit(f"compare_sep_background.py: cannot install {requirement} with {sys.executable} -m pip "
                 f"(network or index unavailable?):\n{result.stdout[-2000:]}")
    importlib.invalidate_caches()
    return importlib.import_module(module)


def synthetic_fields(np):
    """Fields with known structure: gradients, non-multiple sizes, NaN areas, one-row grids."""
    rng = np.random.default_rng(20240611)
    fields = []

    def stars(image, count, amp_range, sigma_range):
        h, w = image.shape
        yy, xx = np.mgrid[0:h, 0:w]
        for _ in range(count):
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            amp, sig = rng.uniform(*amp_range), rng.uniform(*sigma_range)
            x0, x1 = max(0, int(cx - 6 * sig)), min(w, int(cx + 6 * sig) + 1)
            y0, y1 = max(0, int(cy - 6 * sig)), min(h, int(cy + 6 * sig) + 1)
            sub = (xx[y0:y1, x0:x1] - cx) ** 2 + (yy[y0:y1, x0:x1] - cy) ** 2
            image[y0:y1, x0:x1] += amp * np.exp(-sub / (2 * sig * sig))

    h, w = 700, 1000  # not multiples of 64: partial last meshes
    yy, xx = np.mgrid[0:h, 0:w]
    img = 100.0 + 0.05 * xx + 0.03 * yy + rng.normal(0, 5, (h, w))
    stars(img, 300, (20, 2000), (0.8, 3.0))
    fields.append(("gradient_1000x700", img.astype(np.float32)))

    h, w = 389, 517  # a masked block (dropped meshes, filled from neighbours) and scattered NaN
    yy, xx = np.mgrid[0:h, 0:w]
    img = 1000.0 - 0.2 * xx + 0.0004 * (yy - 200) ** 2 + rng.normal(0, 12, (h, w))
    stars(img, 80, (50, 5000), (1.0, 2.5))
    img[100:260, 150:330] = np.nan
    img[rng.random((h, w)) < 0.002] = np.nan
    fields.append(("masked_517x389", img.astype(np.float32)))

    img = rng.poisson(40.0, (300, 333)).astype(np.float32)  # integer counts: ties in the histogram
    stars(img, 40, (20, 400), (1.0, 2.0))
    fields.append(("poisson_333x300", np.floor(img).astype(np.float32)))

    img = (50.0 + 0.3 * np.arange(200)[None, :] + rng.normal(0, 2, (40, 200))).astype(np.float32)
    fields.append(("one_row_200x40", img))  # ny = 1: SEP's linear-in-x special case

    img = (10.0 + 0.5 * np.arange(300)[:, None] + rng.normal(0, 1, (300, 50))).astype(np.float32)
    fields.append(("one_column_50x300", img))  # nx = 1
    return fields


def fits_images(np, fits, path):
    """Every 2-D image HDU (first plane of cubes) as native float32 with NaN for blanks."""
    images = []
    with fits.open(path, memmap=False) as hdus:
        for index, hdu in enumerate(hdus):
            if hdu.data is None or not hasattr(hdu, "shape") or len(hdu.data.shape) < 2:
                continue
            data = hdu.data
            while data.ndim > 2:
                data = data[0]
            name = os.path.basename(path).replace(".fits", "") + (f".hdu{index}" if index else "")
            images.append((name, np.ascontiguousarray(data, dtype=np.float32)))
    return images


def mesh_background(sep, np, data, mesh=64, filter_size=3):
    """SEP's mesh background of an image with NaN for invalid pixels: (valid, the pixels with 0 for
    invalid ones, the sep.Background, its back() and rms() maps as contiguous float32)."""
    valid = np.isfinite(data)
    clean = np.where(valid, data, 0).astype(np.float32)
    bkg = sep.Background(clean, mask=~valid, bw=mesh, bh=mesh, fw=filter_size, fh=filter_size)
    back = np.ascontiguousarray(bkg.back(), dtype=np.float32)
    rms = np.ascontiguousarray(bkg.rms(), dtype=np.float32)
    return valid, clean, bkg, back, rms


# sep.extract's fields written per object (SEP 1.4: float64 positions, moments and their
# errors; cxx, cyy, cxy and the fluxes as float32), and flux_err (not a SEP field): the flux_iso
# error from SEP's segmentation map, sqrt(sum over the segment of rms^2 + max(data - back, 0) /
# gain) in float64 (SExtractor's FLUXERR_ISO with SEP's per-pixel Poisson term).
CATALOG_FIELDS = ("xmin", "xmax", "ymin", "ymax", "npix", "x", "y", "x2", "y2", "xy", "errx2", "erry2", "errxy",
                  "a", "b", "theta", "cxx", "cyy", "cxy", "flux", "peak", "flag")
GAIN = 2.5  # e-/ADU for the extraction's Poisson term (any positive value tests the rule)


def extract_catalog(sep, np, clean, valid, back, rms, nsigma):
    subtracted = clean - back
    objects, segmap = sep.extract(subtracted, nsigma, err=rms, gain=GAIN, mask=~valid, minarea=1, filter_kernel=None,
                                  deblend_cont=1.0, clean=False, segmentation_map=True)
    variance = rms.astype(np.float64) ** 2 + np.maximum(subtracted.astype(np.float64), 0.0) / GAIN
    labels = segmap.ravel()
    sums = np.bincount(labels, weights=variance.ravel(), minlength=len(objects) + 1)
    catalog = []
    for index, obj in enumerate(objects):
        row = {field: (int(obj[field]) if field in ("xmin", "xmax", "ymin", "ymax", "npix", "flag") else float(obj[field]))
               for field in CATALOG_FIELDS}
        row["flux_err"] = float(np.sqrt(sums[index + 1]))
        catalog.append(row)
    return catalog


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="FITS files")
    parser.add_argument("-o", "--output", required=True, help="directory for cases.json and the .f32 files")
    parser.add_argument("--mesh", type=int, default=64)
    parser.add_argument("--filter", type=int, default=3)
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--extract", type=float, default=0.0, help="also sep.extract at NSIGMA x rms")
    args = parser.parse_args()

    np = ensure("numpy", "numpy")
    sep = ensure("sep", f"sep=={SEP_VERSION}")
    fits = ensure("astropy.io.fits", "astropy") if args.images else None
    os.makedirs(args.output, exist_ok=True)

    cases = []
    inputs = [] if args.no_synthetic else synthetic_fields(np)
    for path in args.images:
        inputs += fits_images(np, fits, path)
    for name, data in inputs:
        valid, clean, bkg, back, rms = mesh_background(sep, np, data, args.mesh, args.filter)
        h, w = data.shape
        for suffix, array in (("image", data), ("back", back), ("rms", rms)):
            array.astype("<f4").tofile(os.path.join(args.output, f"{name}.{suffix}.f32"))
        case = {"name": name, "width": w, "height": h, "mesh": args.mesh, "filter": args.filter,
                "globalback": float(bkg.globalback), "globalrms": float(bkg.globalrms)}
        if args.extract > 0:
            catalog = extract_catalog(sep, np, clean, valid, back, rms, args.extract)
            with open(os.path.join(args.output, f"{name}.sep_catalog.json"), "w") as out:
                json.dump(catalog, out)
            case.update({"extract_nsigma": args.extract, "extract_gain": GAIN, "sep_objects": len(catalog)})
        cases.append(case)
        print(f"{name}: {w}x{h} globalback {bkg.globalback:.6g} globalrms {bkg.globalrms:.6g}")
    with open(os.path.join(args.output, "cases.json"), "w") as out:
        json.dump({"sep_version": sep.__version__, "cases": cases}, out, indent=1)


if __name__ == "__main__":
    main()
