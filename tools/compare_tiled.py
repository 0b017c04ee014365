#!/usr/bin/env python3
"""Compare the catalogs of a tiled run with those of a whole-image run (docs/tiling.md): the same
sources in the same order with the same integer columns (id, npix, bounding box, peak position,
flags), the same peak value, and floating-point columns equal to float64 rounding (the sums of a
source cut by tile borders are added in another order). Also: the same items, statuses and
background statistics in summary.json, and every other output file (label maps, bgsub images)
byte-identical. Standard library only.
usage: compare_tiled.py WHOLE_OUT TILED_OUT [--rtol 1e-10]   (exit 1 on any difference)"""
import csv, json, math, pathlib, sys

INTEGER = {"id", "npix", "xmin", "xmax", "ymin", "ymax", "peak_x", "peak_y", "flags"}
EXACT_FLOAT = {"peak"}
# Functions of compared columns (the error ellipse of errx2..errxy, a/b), made by the same host
# code for both runs; errtheta of a near-round error ellipse is ill-conditioned.
DERIVED = {"erra", "errb", "errtheta", "elongation", "ellipticity"}


def close(a, b, rtol, scale):
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    return abs(a - b) <= rtol * max(abs(a), abs(b), scale)


def split_statistics(data):
    """FITS bytes with the BKG_MED, BKG_STD and THRESH cards blanked, and their values: a tiled
    run's background statistics differ from the whole image's in the last digits (summation
    order); everything else must be identical."""
    values = []
    for at in range(0, min(len(data), 2880 * 8), 80):
        if data[at:at + 8] in (b"BKG_MED ", b"BKG_STD ", b"THRESH  "):
            values.append(float(data[at + 10:at + 80].split(b"/")[0]))
            data = data[:at] + b" " * 80 + data[at + 80:]
    return data, values


def compare_catalog(path_a, path_b, rtol, problems):
    rows_a = list(csv.DictReader(open(path_a)))
    rows_b = list(csv.DictReader(open(path_b)))
    if len(rows_a) != len(rows_b):
        problems.append(f"{path_b}: {len(rows_b)} sources, whole image {len(rows_a)}")
        return 0
    worst = 0.0
    for ra, rb in zip(rows_a, rows_b):
        if set(ra) != set(rb):
            problems.append(f"{path_b}: columns differ"); return 0
        # Moments (their errors, the ellipse parameters) can be ~0 while their terms are large:
        # compared at the scale of their group's diagonal (x2 + y2, errx2 + erry2, cxx + cyy).
        def diagonal(first, second):
            return abs(float(ra.get(first, 0) or 0)) + abs(float(ra.get(second, 0) or 0))
        group_scale = {}
        for group in (("x2", "y2", "xy", "a", "b"), ("errx2", "erry2", "errxy"), ("cxx", "cyy", "cxy")):
            for key in group:
                group_scale[key] = diagonal(group[0], group[1])
        for key, va in ra.items():
            vb = rb[key]
            if key in DERIVED:
                continue
            if key in INTEGER or key in EXACT_FLOAT:
                if va != vb and float(va) != float(vb):
                    problems.append(f"{path_b.name}: source {ra['id']}: {key} {vb}, whole image {va}")
                continue
            a, b = float(va), float(vb)
            scale = group_scale.get(key, 1.0 if key == "theta" else 0.0)
            if not close(a, b, rtol, scale):
                problems.append(f"{path_b.name}: source {ra['id']}: {key} {vb}, whole image {va}")
            elif a != b:
                worst = max(worst, abs(a - b) / max(abs(a), abs(b), scale))
    return len(rows_a), worst


def main(args):
    rtol = 1e-10
    if "--rtol" in args:
        i = args.index("--rtol"); rtol = float(args[i + 1]); del args[i:i + 2]
    a, b = pathlib.Path(args[0]), pathlib.Path(args[1])
    problems, sources, catalogs, files, worst = [], 0, 0, 0, 0.0
    for file_a in sorted(p for p in a.rglob("*") if p.is_file()):
        rel = file_a.relative_to(a)
        if rel.name in ("summary.json", "manifest.jsonl", "catalog.csv"):
            continue
        file_b = b / rel
        if not file_b.exists():
            problems.append(f"{file_b}: missing"); continue
        if file_a.name.endswith(".cat.csv"):
            result = compare_catalog(file_a, file_b, rtol, problems)
            if result:
                sources += result[0]; worst = max(worst, result[1]); catalogs += 1
        elif file_a.name.endswith(".cat.fits"):
            continue  # the same numbers as the CSV
        else:
            files += 1
            (bytes_a, values_a), (bytes_b, values_b) = split_statistics(file_a.read_bytes()), split_statistics(file_b.read_bytes())
            if bytes_a != bytes_b or len(values_a) != len(values_b) or \
                    not all(close(x, y, 1e-9, abs(x)) for x, y in zip(values_a, values_b)):
                problems.append(f"{file_b}: differs from the whole-image run's file")
    items = lambda p: {(i["file"], i["hdu"], i["plane"]): i for i in json.load(open(p / "summary.json"))["items"]}
    ia, ib = items(a), items(b)
    if set(ia) != set(ib):
        problems.append(f"summary items differ: {sorted(set(ia) ^ set(ib))[:4]}")
    for key, x in ia.items():
        y = ib.get(key)
        if y is None:
            continue
        if x["status"] != y["status"] or x.get("nsources") != y.get("nsources"):
            problems.append(f"{key}: status/nsources {y['status']}/{y.get('nsources')}, whole {x['status']}/{x.get('nsources')}")
        bx, by = x.get("background"), y.get("background")
        if bx and by:
            for k in ("median", "iterations", "kept", "valid"):
                if bx[k] != by[k]:
                    problems.append(f"{key}: background {k} {by[k]}, whole image {bx[k]}")
            if bx["std"] is not None and abs(bx["std"] - by["std"]) > 1e-9 * abs(bx["std"]):
                problems.append(f"{key}: background std {by['std']}, whole image {bx['std']}")
    tiled = sum(1 for i in ib.values() if "tiles" in i)
    print(f"compared {catalogs} catalogs ({sources} sources, largest float difference {worst:.2e} relative), "
          f"{files} other files, {len(ia)} items ({tiled} tiled): {len(problems)} differences")
    for p in problems[:40]:
        print("  " + p)
    return 1 if problems or catalogs == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
