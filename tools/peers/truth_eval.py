"""Completeness and purity of each tool's catalogs against the synthetic fields' truth
(make_starfield.py): completeness = fraction of truth stars (in S/N bins, and above --snr) with a
detection within --radius px; purity = fraction of detections with a truth star within --radius.
--one-to-one pairs each detection with at most one truth object (closest pairs first), so a merged
blend counts once. Crowded fields (make_starfield.py --crowded; truth with a `kind` column) add
per flux ratio and separation bin the completeness of the primaries and secondaries of the close
pairs, for galaxies the completeness and how often one is split (more than one detection within
2 r_e + 1 px of its centre), and the detections over FAR_PX px from every truth object (noise).
Usage: truth_eval.py --truth FIELDS_DIR --tool NAME=CATALOG_DIR ... --out FILE.json [--one-to-one]"""
import argparse
import json
import os
import sys

import numpy as np
from scipy.spatial import cKDTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SNR_BINS = (0, 5, 10, 20, 50, 100, 1e12)


SEPARATION_BINS = (2, 3, 4, 5, 6, 7, 8)
FAR_PX = 12  # beyond every pair (8 px) and galaxy (2 r_e <= 10 px) of a crowded field: noise peaks


def read_truth(path: str) -> dict:
    with open(path) as handle:
        names = handle.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: data[:, i] for i, name in enumerate(names)}


def match(truth_xy, det_xy, radius: float, one_to_one: bool):
    """(index of the detection matched to each truth object or -1, whether each detection is
    matched): nearest neighbour both ways, or a one-to-one assignment, closest pairs first."""
    idx, det_found = np.full(len(truth_xy), -1), np.zeros(len(det_xy), bool)
    if not len(det_xy):
        return idx, det_found
    det_tree, truth_tree = cKDTree(det_xy), cKDTree(truth_xy)
    if not one_to_one:
        dist, nearest = det_tree.query(truth_xy, distance_upper_bound=radius)
        det_dist, _ = truth_tree.query(det_xy, distance_upper_bound=radius)
        return np.where(np.isfinite(dist), nearest, -1), np.isfinite(det_dist)
    pairs = truth_tree.sparse_distance_matrix(det_tree, radius, output_type="ndarray")
    for t, d in zip(pairs["i"][np.argsort(pairs["v"], kind="stable")],
                    pairs["j"][np.argsort(pairs["v"], kind="stable")]):
        if idx[t] < 0 and not det_found[d]:
            idx[t], det_found[d] = d, True
    return idx, det_found


def crowded(truth: dict, det_xy, found) -> dict:
    """Close pairs by flux ratio and separation bin; galaxies found and split."""
    kind, sep, ratio = truth["kind"], truth["separation"], truth["flux_ratio"]
    rows = []
    for r in np.unique(ratio[kind == 1]):
        for lo, hi in zip(SEPARATION_BINS[:-1], SEPARATION_BINS[1:]):
            in_bin = (ratio == r) & (sep >= lo) & (sep < hi)
            primary, secondary = found[in_bin & (kind == 0)], found[in_bin & (kind == 1)]
            rows.append({"flux_ratio": float(r), "sep_lo": lo, "sep_hi": hi, "pairs": int(primary.size),
                         "primary": float(primary.mean()) if primary.size else None,
                         "secondary": float(secondary.mean()) if secondary.size else None,
                         "both": float((primary & secondary).mean()) if primary.size else None})
    galaxy = kind == 2
    near = (cKDTree(det_xy).query_ball_point(np.column_stack([truth["x"], truth["y"]])[galaxy],
                                             2 * truth["r_e"][galaxy] + 1, return_length=True)
            if len(det_xy) else np.zeros(int(galaxy.sum()), int))
    pair_star = kind < 2
    far = (cKDTree(np.column_stack([truth["x"], truth["y"]])).query(det_xy)[0] > FAR_PX
           if len(det_xy) else np.zeros(0, bool))
    return {"pairs": rows, "pair_stars": int(pair_star.sum()),
            "far_px": FAR_PX, "detections_far_from_truth": int(far.sum()),
            "pair_star_completeness": float(found[pair_star].mean()) if pair_star.any() else None,
            "galaxies": int(galaxy.sum()),
            "galaxy_completeness": float(found[galaxy].mean()) if galaxy.any() else None,
            "galaxies_split": float(np.mean(near > 1)) if galaxy.any() else None,
            "galaxy_detections_mean": float(np.mean(near)) if galaxy.any() else None}


def evaluate(truth: dict, det: dict, radius: float, snr_cut: float, one_to_one=False) -> dict:
    keep = np.isfinite(det["x"]) & np.isfinite(det["y"])
    det = {k: v[keep] for k, v in det.items()}
    truth_xy = np.column_stack([truth["x"], truth["y"]])
    det_xy = np.column_stack([det["x"], det["y"]])
    idx, det_found = match(truth_xy, det_xy, radius, one_to_one)
    found = idx >= 0
    purity = float(np.mean(det_found)) if len(det_xy) else None
    bins = []
    for lo, hi in zip(SNR_BINS[:-1], SNR_BINS[1:]):
        sel = (truth["snr"] >= lo) & (truth["snr"] < hi)
        bins.append({"snr_lo": lo, "snr_hi": hi if hi < 1e11 else None, "stars": int(sel.sum()),
                     "completeness": float(found[sel].mean()) if sel.any() else None})
    bright = truth["snr"] >= snr_cut
    ratio_sel = found & (truth["snr"] >= 50)
    flux_ratio = det["flux"][idx[ratio_sel]] / truth["flux_image"][ratio_sel] if ratio_sel.any() else []
    result = {"stars": int(len(truth_xy)), "detections": int(len(det_xy)),
              "nonfinite_detections": int((~keep).sum()),
              f"completeness_snr_ge_{snr_cut:g}": float(found[bright].mean()) if bright.any() else None,
              "purity": purity, "completeness_by_snr": bins,
              "median_isoflux_over_true_flux_snr_ge_50":
                  float(np.median(flux_ratio)) if len(flux_ratio) else None}
    if "kind" in truth:
        result.update(crowded(truth, det_xy, found))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--truth", required=True, help="directory of FIELD.fits + FIELD.truth.csv")
    parser.add_argument("--tool", action="append", required=True, help="NAME=CATALOG_DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--radius", type=float, default=1.0)
    parser.add_argument("--snr", type=float, default=20.0, help="completeness above this S/N")
    parser.add_argument("--one-to-one", action="store_true", help="one truth object per detection")
    args = parser.parse_args()
    fields = sorted(f[:-len(".truth.csv")] for f in os.listdir(args.truth) if f.endswith(".truth.csv"))
    result = {"radius_px": args.radius, "snr_cut": args.snr, "one_to_one": args.one_to_one, "tools": {}}
    for spec in args.tool:
        name, directory = spec.split("=", 1)
        per_field = {}
        for field in fields:
            catalog = os.path.join(directory, field + ".csv")
            if os.path.exists(catalog):
                per_field[field] = evaluate(read_truth(os.path.join(args.truth, field + ".truth.csv")),
                                            common.read_catalog(catalog), args.radius, args.snr,
                                            args.one_to_one)
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
