#!/usr/bin/python3
"""Compare two imflow output trees (e.g. the CPU and the CUDA run on the same inputs): every
catalog CSV must list the same sources (same ids, npix, bounding boxes and peak positions),
centroids within 1e-4 px, fluxes (and flux_iso_err) within 1e-5 relative, photometry fluxes
(flux_auto, flux_aper_*, flux_win) within 1e-5 relative or 1% of their error, the other
photometry columns (kron_radius, flux_radius_*, the windowed position and moments and their
errors) within 1e-4 relative or absolute (the windowed ones only where both flux_win > 0), the
photometry flags equal. (A filtered detection image
and the background maps differ between the backends in the last float32 bit; blends' centres,
weighted by the detection values, and the sums of apertures over many pixels carry that.) background median and
iterations equal and std within 1e-6 relative in summary.json; the same items in both trees.
usage: compare_catalogs.py CPU_OUT GPU_OUT   (exit 1 on any difference)"""
import csv, json, pathlib, sys

PHOTOMETRY = ("kron_radius", "flux_auto", "flux_aper", "flux_radius", "xwin", "ywin", "flux_win", "x2win", "y2win",
              "xywin", "errx2win", "erry2win", "errxywin")


WINDOWED = {"xwin", "ywin", "flux_win", "flux_win_err", "x2win", "y2win", "xywin", "errx2win", "erry2win", "errxywin"}


def error_column(key):
    """The error column of a photometry flux (flux_auto_err, flux_aper_err_5, flux_win_err), else ''."""
    if key in ("flux_auto", "flux_win"):
        return key + "_err"
    return "flux_aper_err_" + key[len("flux_aper_"):] if key.startswith("flux_aper_") and "_err" not in key else ""


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
            flags = [k for k in ra if k.startswith(("flags_auto", "flags_phot", "flags_win"))]
            if any(ra[k] != rb.get(k) for k in flags):
                problems.append(f"{cat_a.name}: source {ra['id']}: {[k for k in flags if ra[k] != rb.get(k)]} differ")
            for key in ("flux", "flux_iso_err", *(k for k in ra if k.startswith(PHOTOMETRY))):
                if key not in ra:
                    continue
                fa, fb = float(ra[key]), float(rb[key])
                if fa != fa and fb != fb:
                    continue
                if key in WINDOWED and not (float(ra["flux_win"]) > 0 and float(rb["flux_win"]) > 0):
                    continue  # SEP's winpos on a source of no positive windowed flux wanders
                error = error_column(key)
                if error in ra:  # a photometry flux: its error column sets the scale
                    tolerance = max(1e-5 * abs(fa), 1e-2 * abs(float(ra[error])))
                elif key.startswith(PHOTOMETRY):
                    tolerance = max(1e-4 * abs(fa), 1e-4)
                else:
                    tolerance = 1e-5 * max(abs(fa), 1e-30)
                if not abs(fa - fb) <= tolerance:
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
