#!/usr/bin/env python3
"""SEP's photometry on sep.extract's catalogs, for tests/test_aperture_sep.cpp ([sep_photometry]),
which calls imflow's aperture kernels on the same pixels and objects and compares.

Per image (FITS files given on the command line, and a synthetic field of stars and elongated
galaxies with a masked block) it runs sep.Background(mesh 64, filter 3) and
sep.extract(data - back, 1.5, err=rms, mask) and then SEP's documented recipes
(docs/apertures.rst) on data - back with err=rms, gain GAIN and the mask (1 = invalid pixel):
  kron_radius(x, y, a, b, theta, 6); FLUX_AUTO = sum_ellipse at 2.5 kron_radius, subpix 1, flag
  or-ed with the Kron flag, or sum_circle of radius 1.75 (subpix 1) where kron_radius sqrt(a b) < 1.75;
  sum_circle for RADII with subpix 0 and 5; sum_circann(5, 8) and sum_circle(5, bkgann=(8, 12)),
  subpix 0; sum_ellipse(3) and sum_ellipann(2, 4) with subpix 0 (exact ellipse overlap);
  flux_radius(6 a, [0.5, 0.9], normflux=FLUX_AUTO, subpix 5);
  winpos(sig = 2 / 2.35 x flux_radius(0.5)) (SEP's documented SExtractor equivalent, subpix 11).
It writes, under -o DIR:
  NAME.sub.f32, NAME.rms.f32, NAME.mask.f32   data - back, the RMS map and the mask (float32)
  NAME.photometry.json                         per object: the catalog row and SEP's results
  cases.json                                   the cases and SEP's version
Objects whose ellipse SEP's aperture functions reject (a or b not finite) are left out.

Runs with the PATH python3 and installs what it needs there (pip: sep==1.4.1, numpy, astropy);
exits saying so when it cannot.

  python3 tools/compare_sep_photometry.py -o DIR [FILE.fits ...]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sep_background import ensure, fits_images, mesh_background  # noqa: E402

SEP_VERSION = "1.4.1"
GAIN = 2.5
RADII = (1.5, 3.0, 5.0, 8.0)
NSIGMA = 1.5


def synthetic_field(np):
    """Stars and elongated galaxies on a flat sky with noise, a masked (NaN) block and edge sources."""
    rng = np.random.default_rng(20240722)
    h, w = 400, 480
    yy, xx = np.mgrid[0:h, 0:w]
    img = 50.0 + rng.normal(0, 4, (h, w))
    for i in range(160):
        cx, cy = rng.uniform(-3, w + 3), rng.uniform(-3, h + 3)
        amp = 15 * (1 - rng.random()) ** (-1.0 / 1.2)
        amp = min(amp, 20000)
        if i % 3 == 0:  # galaxy: exponential-ish elongated profile
            a = rng.uniform(2.0, 6.0)
            b = a * rng.uniform(0.3, 0.9)
        else:
            a = rng.uniform(0.8, 2.2)
            b = a * rng.uniform(0.85, 1.0)
        t = rng.uniform(-np.pi / 2, np.pi / 2)
        c, s = np.cos(t), np.sin(t)
        r = int(8 * a) + 2
        x0, x1 = max(0, int(cx) - r), min(w, int(cx) + r + 1)
        y0, y1 = max(0, int(cy) - r), min(h, int(cy) + r + 1)
        if x0 >= x1 or y0 >= y1:
            continue
        dx, dy = xx[y0:y1, x0:x1] - cx, yy[y0:y1, x0:x1] - cy
        u, v = (dx * c + dy * s) / a, (-dx * s + dy * c) / b
        rr = u * u + v * v
        img[y0:y1, x0:x1] += amp * (np.exp(-np.sqrt(rr) * 1.5) if i % 3 == 0 else np.exp(-rr / 2))
    img[150:190, 200:260] = np.nan
    return ("synthetic_480x400", img.astype(np.float32))


def clean(values):
    return [None if not np.isfinite(v) else float(v) for v in values]


def photometry(sep, sub, rms, mask, objs):
    x, y, a, b, theta = (np.asarray(objs[f], dtype=np.float64) for f in ("x", "y", "a", "b", "theta"))
    common = dict(err=rms, gain=GAIN, mask=mask)
    out = {}
    kron, kflag = sep.kron_radius(sub, x, y, a, b, theta, 6.0, mask=mask)
    flux, fluxerr, flag = sep.sum_ellipse(sub, x, y, a, b, theta, 2.5 * kron, subpix=1, **common)
    flag |= kflag
    circle = kron * np.sqrt(a * b) < 1.75
    if circle.any():
        cflux, cerr, cflag = sep.sum_circle(sub, x[circle], y[circle], 1.75, subpix=1, **common)
        flux[circle], fluxerr[circle], flag[circle] = cflux, cerr, cflag
    out["kron_radius"], out["kron_flag"] = clean(kron), [int(f) for f in kflag]
    out["flux_auto"], out["flux_auto_err"], out["flux_auto_flag"] = clean(flux), clean(fluxerr), [int(f) for f in flag]
    out["auto_circular"] = [bool(c) for c in circle]
    for subpix in (0, 5):
        for r in RADII:
            s, e, f = sep.sum_circle(sub, x, y, r, subpix=subpix, **common)
            key = f"circle_{r:g}_sub{subpix}"
            out[key], out[key + "_err"], out[key + "_flag"] = clean(s), clean(e), [int(v) for v in f]
    s, e, f = sep.sum_circann(sub, x, y, 5.0, 8.0, subpix=0, **common)
    out["circann_5_8"], out["circann_5_8_err"], out["circann_5_8_flag"] = clean(s), clean(e), [int(v) for v in f]
    s, e, f = sep.sum_circle(sub, x, y, 5.0, bkgann=(8.0, 12.0), subpix=0, **common)
    out["circle_5_bkgann"], out["circle_5_bkgann_err"], out["circle_5_bkgann_flag"] = \
        clean(s), clean(e), [int(v) for v in f]
    s, e, f = sep.sum_ellipse(sub, x, y, a, b, theta, 3.0, subpix=0, **common)
    out["ellipse_3"], out["ellipse_3_err"], out["ellipse_3_flag"] = clean(s), clean(e), [int(v) for v in f]
    s, e, f = sep.sum_ellipann(sub, x, y, a, b, theta, 2.0, 4.0, subpix=0, **common)
    out["ellipann_2_4"], out["ellipann_2_4_err"], out["ellipann_2_4_flag"] = clean(s), clean(e), [int(v) for v in f]
    radii, rflag = sep.flux_radius(sub, x, y, 6.0 * a, [0.5, 0.9], normflux=flux, subpix=5, mask=mask)
    out["flux_radius_50"], out["flux_radius_90"] = clean(radii[:, 0]), clean(radii[:, 1])
    out["flux_radius_flag"] = [int(v) for v in rflag]
    sig = 2.0 / 2.35 * radii[:, 0]
    xwin, ywin, wflag = sep.winpos(sub, x, y, sig, mask=mask)
    out["xwin"], out["ywin"], out["winpos_flag"] = clean(xwin), clean(ywin), [int(v) for v in wflag]
    rows = []
    for i in range(len(x)):
        row = {"x": float(x[i]), "y": float(y[i]), "a": float(a[i]), "b": float(b[i]), "theta": float(theta[i])}
        row.update({key: values[i] for key, values in out.items()})
        rows.append(row)
    return rows


def main():
    global np
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="FITS files")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    np = ensure("numpy", "numpy")
    sep = ensure("sep", f"sep=={SEP_VERSION}")
    fits = ensure("astropy.io.fits", "astropy") if args.images else None
    os.makedirs(args.output, exist_ok=True)

    inputs = [synthetic_field(np)]
    for path in args.images:
        inputs += fits_images(np, fits, path)
    cases = []
    for name, data in inputs:
        valid, data0, _, back, rms = mesh_background(sep, np, data)
        sub = np.ascontiguousarray(data0 - back, dtype=np.float32)
        mask = (~valid).astype(np.float32)
        sep.set_extract_pixstack(max(300000, data.size))
        objs = sep.extract(sub, NSIGMA, err=rms, mask=mask, minarea=5)
        keep = np.isfinite(objs["a"]) & np.isfinite(objs["b"]) & (objs["b"] >= 0) & (objs["a"] >= objs["b"])
        objs = objs[keep]
        rows = photometry(sep, sub, rms, mask, objs)
        h, w = data.shape
        for suffix, array in (("sub", sub), ("rms", rms), ("mask", mask)):
            array.astype("<f4").tofile(os.path.join(args.output, f"{name}.{suffix}.f32"))
        with open(os.path.join(args.output, f"{name}.photometry.json"), "w") as out:
            json.dump(rows, out)
        circular = sum(1 for r in rows if r["auto_circular"])
        cases.append({"name": name, "width": w, "height": h, "objects": len(rows), "gain": GAIN,
                      "radii": list(RADII)})
        print(f"{name} {w}x{h}: {len(rows)} objects ({circular} with the circular AUTO fallback)")
    with open(os.path.join(args.output, "cases.json"), "w") as out:
        json.dump({"sep_version": sep.__version__, "cases": cases}, out, indent=1)


if __name__ == "__main__":
    main()
