"""Cross-matches two runners' catalogs (directories of the common CSV, one file per image) by
nearest neighbour within a radius, both ways: matched fraction each way, median flux ratio (A/B)
and median/p95 centroid offset of the matched pairs, per image and pooled; JSON out.
Usage: crossmatch.py DIR_A DIR_B --out FILE.json [--radius 1.0]"""
import argparse
import glob
import json
import os
import sys

import numpy as np
from scipy.spatial import cKDTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def nearest(src: dict, dst: dict, radius: float):
    """For each src row: index of the nearest dst row within radius (-1: none) and the distance."""
    if len(src["x"]) == 0:
        return np.empty(0, dtype=int), np.empty(0)
    if len(dst["x"]) == 0:
        return np.full(len(src["x"]), -1), np.full(len(src["x"]), np.inf)
    tree = cKDTree(np.column_stack([dst["x"], dst["y"]]))
    dist, idx = tree.query(np.column_stack([src["x"], src["y"]]), distance_upper_bound=radius)
    idx = np.where(np.isfinite(dist), idx, -1)
    return idx, dist


def finite_rows(cat: dict):
    """Rows with a finite centroid (imflow reports NaN for a zero-sum segment), and how many not."""
    keep = np.isfinite(cat["x"]) & np.isfinite(cat["y"])
    return {k: v[keep] for k, v in cat.items()}, int((~keep).sum())


def match(a: dict, b: dict, radius: float) -> dict:
    (a, bad_a), (b, bad_b) = finite_rows(a), finite_rows(b)
    a_to_b, dist = nearest(a, b, radius)
    b_to_a, _ = nearest(b, a, radius)
    ok = a_to_b >= 0
    stats = {"n_a": int(len(a["x"])), "n_b": int(len(b["x"])), "nonfinite_a": bad_a,
             "nonfinite_b": bad_b,
             "matched_a": int(ok.sum()), "matched_b": int((b_to_a >= 0).sum())}
    stats["pairs"] = {"flux_ratio": (a["flux"][ok] / b["flux"][a_to_b[ok]]).tolist(),
                      "deblended": ((a["deblended"][ok] == 1) | (b["deblended"][a_to_b[ok]] == 1)).tolist(),
                      "offset": dist[ok].tolist(),
                      "npix_ratio": (a["npix"][ok] / b["npix"][a_to_b[ok]]).tolist()}
    return stats


def summarize(stats: dict) -> dict:
    pairs = stats.pop("pairs")
    out = dict(stats)
    out["fraction_a_matched"] = stats["matched_a"] / stats["n_a"] if stats["n_a"] else None
    out["fraction_b_matched"] = stats["matched_b"] / stats["n_b"] if stats["n_b"] else None
    ratio = np.asarray(pairs["flux_ratio"])
    ratio = ratio[np.isfinite(ratio)]
    offset = np.asarray(pairs["offset"])
    npix = np.asarray(pairs["npix_ratio"])
    out["median_flux_ratio"] = float(np.median(ratio)) if ratio.size else None
    out["median_abs_flux_deviation"] = float(np.median(np.abs(ratio - 1))) if ratio.size else None
    off = np.abs(np.asarray(pairs["flux_ratio"]) - 1) > 1e-4
    out["pairs_flux_off_1e-4"] = int(np.sum(off))
    out["pairs_deblended"] = int(np.sum(pairs["deblended"]))  # A's or B's object split from a blend
    out["pairs_flux_off_1e-4_not_deblended"] = int(np.sum(off & ~np.asarray(pairs["deblended"], bool)))
    out["median_offset_px"] = float(np.median(offset)) if offset.size else None
    out["p95_offset_px"] = float(np.percentile(offset, 95)) if offset.size else None
    out["npix_equal_fraction"] = float(np.mean(npix == 1.0)) if npix.size else None
    return out


def crossmatch(dir_a: str, dir_b: str, radius: float) -> dict:
    names = sorted(set(os.path.basename(p) for p in glob.glob(os.path.join(dir_a, "*.csv")))
                   & set(os.path.basename(p) for p in glob.glob(os.path.join(dir_b, "*.csv"))))
    if not names:
        raise SystemExit(f"{dir_a} and {dir_b}: no image catalog in common")
    images, pooled = {}, {"n_a": 0, "n_b": 0, "nonfinite_a": 0, "nonfinite_b": 0,
                          "matched_a": 0, "matched_b": 0,
                          "pairs": {"flux_ratio": [], "deblended": [], "offset": [], "npix_ratio": []}}
    for name in names:
        stats = match(common.read_catalog(os.path.join(dir_a, name)),
                      common.read_catalog(os.path.join(dir_b, name)), radius)
        for key in ("n_a", "n_b", "nonfinite_a", "nonfinite_b", "matched_a", "matched_b"):
            pooled[key] += stats[key]
        for key in pooled["pairs"]:
            pooled["pairs"][key] += stats["pairs"][key]
        images[name[:-len(".csv")]] = summarize(stats)
    return {"a": dir_a, "b": dir_b, "radius_px": radius, "pooled": summarize(pooled),
            "images": images}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dir_a")
    parser.add_argument("dir_b")
    parser.add_argument("--out", required=True)
    parser.add_argument("--radius", type=float, default=1.0)
    args = parser.parse_args()
    result = crossmatch(args.dir_a, args.dir_b, args.radius)
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
    p = result["pooled"]
    print(f"{os.path.basename(args.dir_a.rstrip('/'))} vs {os.path.basename(args.dir_b.rstrip('/'))}: "
          f"{p['n_a']} / {p['n_b']} sources, matched {p['fraction_a_matched']:.4f} / "
          f"{p['fraction_b_matched']:.4f}, flux ratio {p['median_flux_ratio']}, "
          f"offset median {p['median_offset_px']} p95 {p['p95_offset_px']}")


if __name__ == "__main__":
    main()
