"""Compares imflow's background map (image - imflow's `bgsub` output) with SEP's (sep.Background,
same mesh and filter) per image: median and max of |difference| relative to SEP's background and
to SEP's rms. JSON out. Usage: background_check.py --images DIR --bgsub DIR --out FILE.json
[--mesh 64] [--filter 3]"""
import argparse
import json
import os
import sys

import numpy as np
import sep

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def compare(image: np.ndarray, bgsub: np.ndarray, mesh: int, filt: int) -> dict:
    finite = np.isfinite(image)
    bkg = sep.Background(np.where(finite, image, 0).astype(np.float32), mask=~finite, bw=mesh,
                         bh=mesh, fw=filt, fh=filt, fthresh=0.0)
    ours = image.astype(np.float64) - bgsub.astype(np.float64)
    diff = np.abs(ours - bkg.back())[finite]
    rel = diff / np.maximum(np.abs(bkg.back()[finite]), 1e-30)
    rel_rms = diff / np.maximum(np.abs(bkg.rms()[finite]), 1e-30)
    spread = float(np.ptp(ours[finite]))
    # float32 rounding of image - bgsub is up to ~1 ulp of the largest pixel value.
    tolerance = 1e-6 * max(float(np.abs(image[finite]).max()), 1e-30)
    return {"imflow_background_is_constant": spread <= tolerance,
            "median_rel_to_back": float(np.median(rel)), "max_rel_to_back": float(rel.max()),
            "p99_rel_to_back": float(np.percentile(rel, 99)),
            "median_rel_to_rms": float(np.median(rel_rms)), "max_rel_to_rms": float(rel_rms.max()),
            "sep_globalback": float(bkg.globalback), "sep_globalrms": float(bkg.globalrms)}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", required=True)
    parser.add_argument("--bgsub", required=True, help="imflow output dir with <image>.bgsub.fits")
    parser.add_argument("--out", required=True)
    parser.add_argument("--mesh", type=int, default=64)
    parser.add_argument("--filter", type=int, default=3)
    args = parser.parse_args()
    result = {"mesh": args.mesh, "filter": args.filter, "images": {}}
    for path in common.list_images(args.images):
        name = os.path.basename(path)[:-len(".fits")]
        bgsub = os.path.join(args.bgsub, name + ".bgsub.fits")
        if not os.path.exists(bgsub):
            raise SystemExit(f"{bgsub}: missing (imflow_run.py --bgsub-out writes it)")
        result["images"][name] = compare(common.read_image(path), common.read_image(bgsub),
                                         args.mesh, args.filter)
    worst = max(r["max_rel_to_back"] for r in result["images"].values())
    constant = sum(r["imflow_background_is_constant"] for r in result["images"].values())
    result["images_with_constant_imflow_background"] = constant
    if constant:
        print(f"background_check: WARNING: {constant} images' imflow background (image - bgsub) is "
              "a constant: the bgsub output subtracts a scalar, not the mesh map")
    result["max_rel_to_back_all_images"] = worst
    result["median_of_medians_rel_to_back"] = float(np.median(
        [r["median_rel_to_back"] for r in result["images"].values()]))
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
    print(f"background_check: {len(result['images'])} images, max |imflow - SEP| / SEP back "
          f"{worst:.3g}, median of medians {result['median_of_medians_rel_to_back']:.3g}")


if __name__ == "__main__":
    main()
