#!/usr/bin/env python3
"""Crowded star fields as float32 FITS (the generator of compare_sep_deblend.py: Gaussian stars
with a power-law flux distribution on a 200 +- 10 sky), and, with --time-sep, SEP 1.4's time on
each with SExtractor's default deblending, as config/astro-sextractor.yaml runs it:
sep.Background(bw=bh=64, fw=fh=3), then sep.extract(data - back, 1.5, err=globalrms, minarea=5,
filter_kernel=None, deblend_nthresh=32, deblend_cont=0.005, clean=True, clean_param=1.0), one core.
Needs NumPy only (SEP for --time-sep), so it runs on an offline GPU host with the peers carried.

  tools/crowded_fields.py --out DIR [--size 4096] [--count 8] [--density 0.004] [--time-sep JSON]
                          [--sep-fields N]   (SEP on the first N fields only; default all)
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


def time_sep(paths, fields, out):
    import sep
    sep.set_sub_object_limit(4096)  # SEP's default 1024 overflows on crowded fields
    images = []
    for path, data in zip(paths, fields):
        sep.set_extract_pixstack(max(300000, data.size))  # SEP fails on more active pixels
        start = time.perf_counter()
        bkg = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
        objects = sep.extract(data - bkg.back(), 1.5, err=bkg.globalrms, minarea=5, filter_kernel=None,
                              deblend_nthresh=32, deblend_cont=0.005, clean=True, clean_param=1.0)
        seconds = time.perf_counter() - start
        images.append({"file": os.path.basename(path), "seconds": seconds, "objects": int(len(objects)),
                       "blended": int(np.count_nonzero(objects["flag"] & sep.OBJ_MERGED))})
        print(f"sep {os.path.basename(path)}: {len(objects)} objects in {seconds:.3f} s", flush=True)
    report = {"sep_version": sep.__version__, "settings": "Background(64, 64, 3, 3); extract(data - back, 1.5, "
              "err=globalrms, minarea=5, filter_kernel=None, deblend_nthresh=32, deblend_cont=0.005, clean=True)",
              "median_seconds": float(np.median([i["seconds"] for i in images])), "images": images}
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
        time_sep(paths[:n], fields[:n], args.time_sep)


if __name__ == "__main__":
    main()
