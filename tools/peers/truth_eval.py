"""Completeness and purity of each tool's catalogs against the synthetic fields' truth
(make_starfield.py): completeness = fraction of truth stars (in S/N bins, and above --snr) with a
detection within --radius px; purity = fraction of detections with a truth star within --radius.
Usage: truth_eval.py --truth FIELDS_DIR --tool NAME=CATALOG_DIR ... --out FILE.json"""
import argparse
import json
import os
import sys

import numpy as np
from scipy.spatial import cKDTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SNR_BINS = (0, 5, 10, 20, 50, 100, 1e12)


def read_truth(path: str) -> dict:
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {"x": data[:, 0], "y": data[:, 1], "flux_total": data[:, 2],
            "flux_image": data[:, 3], "snr": data[:, 4]}


def evaluate(truth: dict, det: dict, radius: float, snr_cut: float) -> dict:
    keep = np.isfinite(det["x"]) & np.isfinite(det["y"])
    det = {k: v[keep] for k, v in det.items()}
    truth_xy = np.column_stack([truth["x"], truth["y"]])
    det_xy = np.column_stack([det["x"], det["y"]])
    if len(det_xy):
        dist, idx = cKDTree(det_xy).query(truth_xy, distance_upper_bound=radius)
        found = np.isfinite(dist)
        det_dist, _ = cKDTree(truth_xy).query(det_xy, distance_upper_bound=radius)
        purity = float(np.mean(np.isfinite(det_dist)))
    else:
        found, idx, purity = np.zeros(len(truth_xy), bool), np.zeros(len(truth_xy), int), None
    bins = []
    for lo, hi in zip(SNR_BINS[:-1], SNR_BINS[1:]):
        sel = (truth["snr"] >= lo) & (truth["snr"] < hi)
        bins.append({"snr_lo": lo, "snr_hi": hi if hi < 1e11 else None, "stars": int(sel.sum()),
                     "completeness": float(found[sel].mean()) if sel.any() else None})
    bright = truth["snr"] >= snr_cut
    ratio_sel = found & (truth["snr"] >= 50)
    flux_ratio = det["flux"][idx[ratio_sel]] / truth["flux_image"][ratio_sel] if ratio_sel.any() else []
    return {"stars": int(len(truth_xy)), "detections": int(len(det_xy)),
            "nonfinite_detections": int((~keep).sum()),
            f"completeness_snr_ge_{snr_cut:g}": float(found[bright].mean()) if bright.any() else None,
            "purity": purity, "completeness_by_snr": bins,
            "median_isoflux_over_true_flux_snr_ge_50":
                float(np.median(flux_ratio)) if len(flux_ratio) else None}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--truth", required=True, help="directory of FIELD.fits + FIELD.truth.csv")
    parser.add_argument("--tool", action="append", required=True, help="NAME=CATALOG_DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--radius", type=float, default=1.0)
    parser.add_argument("--snr", type=float, default=20.0, help="completeness above this S/N")
    args = parser.parse_args()
    fields = sorted(f[:-len(".truth.csv")] for f in os.listdir(args.truth) if f.endswith(".truth.csv"))
    result = {"radius_px": args.radius, "snr_cut": args.snr, "tools": {}}
    for spec in args.tool:
        name, directory = spec.split("=", 1)
        per_field = {}
        for field in fields:
            catalog = os.path.join(directory, field + ".csv")
            if os.path.exists(catalog):
                per_field[field] = evaluate(read_truth(os.path.join(args.truth, field + ".truth.csv")),
                                            common.read_catalog(catalog), args.radius, args.snr)
        result["tools"][name] = per_field
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
    key = f"completeness_snr_ge_{args.snr:g}"
    for name, per_field in result["tools"].items():
        for field, r in per_field.items():
            print(f"{name:14} {field:20} completeness(S/N>={args.snr:g}) {r[key]:.4f} "
                  f"purity {r['purity']} detections {r['detections']}")


if __name__ == "__main__":
    main()
