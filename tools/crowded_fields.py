#!/usr/bin/env python3
"""Crowded star fields as float32 FITS (the generator of compare_sep_deblend.py: Gaussian stars
with a power-law flux distribution on a 200 +- 10 sky), and, with --time-sep, SEP 1.4's time on
each with SExtractor's default deblending, as config/astro-sextractor.yaml runs it:
sep.Background(bw=bh=64, fw=fh=3), then sep.extract(data - back, 1.5, err=globalrms, minarea=5,
filter_kernel=None, deblend_nthresh=32, deblend_cont=0.005, clean=True, clean_param=1.0), one core.
--sep-photometry adds, timed apart, the photometry of measure's `auto`, `apertures: [3, 5, 10]`,
`flux_radius: [0.5]` and `windowed` as SEP's documented recipes compute it with err = the RMS map,
no gain (compare_pipeline_photometry.sep_recipe: kron_radius, sum_ellipse at 2.5 Kron radii or the
circle of 1.75, sum_circle of radii 1.5, 2.5 and 5 with subpix 0, flux_radius, winpos).
Needs NumPy only (SEP for --time-sep), so it runs on an offline GPU host with the peers carried.

  tools/crowded_fields.py --out DIR [--size 4096] [--count 8] [--density 0.004] [--time-sep JSON]
                          [--sep-fields N]   (SEP on the first N fields only; default all)
                          [--sep-photometry]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "peers"))
from common import write_fits_float32  # noqa: E402
from compare_sep_deblend import crowded  # noqa: E402


def time_sep(paths, fields, out, photometry=False):
    import sep
    from compare_pipeline_photometry import sep_recipe
    sep.set_sub_object_limit(4096)  # SEP's default 1024 overflows on crowded fields
    images = []
    for path, data in zip(paths, fields):
        sep.set_extract_pixstack(max(300000, data.size))  # SEP fails on more active pixels
        start = time.perf_counter()
        bkg = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
        sub = data - bkg.back()
        objects = sep.extract(sub, 1.5, err=bkg.globalrms, minarea=5, filter_kernel=None,
                              deblend_nthresh=32, deblend_cont=0.005, clean=True, clean_param=1.0)
        extracted = time.perf_counter()
        if photometry:  # theta clipped: SEP's float32 pi/2 is above the pi/2 its apertures accept
            theta = np.clip(objects["theta"], -np.pi / 2, np.pi / 2)
            sep_recipe(sub, *(objects[k] for k in ("x", "y", "a", "b")), theta, bkg.rms(), gain=None)
        seconds = time.perf_counter() - start
        image = {"file": os.path.basename(path), "seconds": seconds, "objects": int(len(objects)),
                 "blended": int(np.count_nonzero(objects["flag"] & sep.OBJ_MERGED))}
        if photometry:
            image.update(extract_seconds=extracted - start, photometry_seconds=seconds - (extracted - start))
        images.append(image)
        print(f"sep {os.path.basename(path)}: {len(objects)} objects in {seconds:.3f} s", flush=True)
    settings = ("Background(64, 64, 3, 3); extract(data - back, 1.5, err=globalrms, minarea=5, "
                "filter_kernel=None, deblend_nthresh=32, deblend_cont=0.005, clean=True)")
    if photometry:
        settings += ("; err=rms(), no gain: kron_radius(6), sum_ellipse(2.5 kron_radius, subpix=1) or "
                     "sum_circle(1.75, subpix=1), sum_circle(1.5, 2.5, 5, subpix=0), flux_radius(6 a, 0.5, "
                     "normflux=flux_auto, subpix=5), winpos(2 / 2.35 flux_radius)")
    report = {"sep_version": sep.__version__, "settings": settings,
              "median_seconds": float(np.median([i["seconds"] for i in images])), "images": images}
    if photometry:
        for part in ("extract", "photometry"):
            report[f"median_{part}_seconds"] = float(np.median([i[f"{part}_seconds"] for i in images]))
    with open(out, "w") as handle:
        json.dump(report, handle, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for the FITS fields")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--density", type=float, default=0.004, help="stars per pixel")
    parser.add_argument("--time-sep", metavar="JSON", help="time SEP on each field into JSON")
    parser.add_argument("--sep-fields", type=int, default=0, help="time SEP on the first N fields only (0: all)")
    parser.add_argument("--sep-photometry", action="store_true", help="time SEP's photometry recipes too")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    paths, fields = [], []
    for k in range(args.count):
        data = crowded(np, args.size, 100 + k, density=args.density)
        path = os.path.join(args.out, f"crowded_{args.size}_{k:02d}.fits")
        write_fits_float32(path, data)
        paths.append(path)
        fields.append(data)
    print(f"crowded_fields.py: {args.count} fields of {args.size}x{args.size} in {args.out}", flush=True)
    if args.time_sep:
        n = args.sep_fields or len(paths)
        time_sep(paths[:n], fields[:n], args.time_sep, args.sep_photometry)


if __name__ == "__main__":
    main()
