#!/usr/bin/python3
"""Compare two imflow output trees (e.g. the CPU and the CUDA run on the same inputs): every
catalog CSV must list the same sources (same ids, npix, bounding boxes and peak positions),
centroids within 1e-4 px, fluxes (and flux_iso_err) within 1e-5 relative; background median and
iterations equal and std within 1e-6 relative in summary.json; the same items in both trees.
usage: compare_catalogs.py CPU_OUT GPU_OUT   (exit 1 on any difference)"""
import csv, json, pathlib, sys

def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))

def main(a, b):
    a, b = pathlib.Path(a), pathlib.Path(b)
    problems, compared, sources = [], 0, 0
    for cat_a in sorted(a.rglob("*.cat.csv")):
        cat_b = b / cat_a.relative_to(a)
        if not cat_b.exists():
            problems.append(f"{cat_b}: missing"); continue
        rows_a, rows_b = load(cat_a), load(cat_b)
        compared += 1
        if len(rows_a) != len(rows_b):
            problems.append(f"{cat_a.name}: {len(rows_a)} vs {len(rows_b)} sources"); continue
        for ra, rb in zip(rows_a, rows_b):
            sources += 1
            exact = [k for k in ("id", "npix", "xmin", "xmax", "ymin", "ymax", "peak_x", "peak_y") if k in ra]
            if any(ra[k] != rb.get(k) for k in exact):
                problems.append(f"{cat_a.name}: source {ra['id']}: {[k for k in exact if ra[k] != rb.get(k)]} differ"); break
            for key in ("x", "y"):
                if abs(float(ra[key]) - float(rb[key])) > 1e-4:
                    problems.append(f"{cat_a.name}: source {ra['id']}: {key} {ra[key]} vs {rb[key]}")
            for key in ("flux", "flux_iso_err"):
                if key not in ra:
                    continue
                fa, fb = float(ra[key]), float(rb[key])
                if abs(fa - fb) > 1e-5 * max(abs(fa), 1e-30) and not (fa != fa and fb != fb):
                    problems.append(f"{cat_a.name}: source {ra['id']}: {key} {fa} vs {fb}")
    sa = {(i["file"].split("/")[-1], i["hdu"], i["plane"]): i for i in json.load(open(a / "summary.json"))["items"]}
    sb = {(i["file"].split("/")[-1], i["hdu"], i["plane"]): i for i in json.load(open(b / "summary.json"))["items"]}
    if set(sa) != set(sb):
        problems.append(f"items differ: {sorted(set(sa) ^ set(sb))[:5]}")
    for key, ia in sa.items():
        ib = sb.get(key)
        if ib is None or ia["status"] != ib["status"]:
            problems.append(f"{key}: status differs"); continue
        if "background" in ia:
            ma, mb = ia["background"], ib["background"]
            if ma["median"] != mb["median"] or ma["iterations"] != mb["iterations"]:
                problems.append(f"{key}: median/iterations {ma} vs {mb}")
            elif ma["std"] is not None and abs(ma["std"] - mb["std"]) > 1e-6 * max(abs(ma["std"]), 1e-300):
                problems.append(f"{key}: std {ma['std']} vs {mb['std']}")
    print(f"compared {compared} catalogs, {sources} sources, {len(sa)} items: {len(problems)} differences")
    for p in problems[:50]:
        print("  " + p)
    return 1 if problems or compared == 0 else 0

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
