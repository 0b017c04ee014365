#!/usr/bin/env python3
"""The origin lesson's CuPy source finder (Carpentries GPU programming lesson) as issue 4's baseline:
kappa-sigma clipping with cupy median/std, segmentation, cupyx.scipy.ndimage label / center_of_mass /
sum_labels, timed per image including transfers; and cupyx.scipy.signal.convolve2d of a 2048x2048
float64 image by the lesson's 15x15 Gaussian (mode full). Prints and writes JSON.
usage: lesson_cupy.py [--json OUT.json] [--reps N] FILE_OR_DIR...   (FITS: a tiny reader, no astropy)
"""
import argparse, glob, json, os, statistics, sys, time

import numpy as np
import cupy as cp
from cupyx.scipy.ndimage import label, center_of_mass, sum_labels

_NP = {8: ">u1", 16: ">i2", 32: ">i4", 64: ">i8", -32: ">f4", -64: ">f8"}


def fits_images(path):
    """Every image HDU (NAXIS >= 2, planes of cubes split) of a plain FITS file as float32 arrays."""
    raw = open(path, "rb").read()
    pos, hdu = 0, 0
    while pos + 2880 <= len(raw):
        cards = {}
        while True:
            block = raw[pos:pos + 2880]; pos += 2880
            for i in range(0, 2880, 80):
                card = block[i:i + 80].decode("ascii", "replace")
                key = card[:8].strip()
                if key == "END":
                    break
                if card[8:10] == "= ":
                    cards[key] = card[10:].split("/")[0].strip().strip("'").strip()
            else:
                continue
            break
        bitpix, naxis = int(cards["BITPIX"]), int(cards.get("NAXIS", 0))
        axes = [int(cards[f"NAXIS{i}"]) for i in range(1, naxis + 1)]
        n = int(np.prod(axes)) if axes else 0
        nbytes = (n + int(cards.get("PCOUNT", 0))) * int(cards.get("GCOUNT", 1)) * abs(bitpix) // 8
        if naxis >= 2 and n > 0 and cards.get("XTENSION", "IMAGE") == "IMAGE":
            data = np.frombuffer(raw, _NP[bitpix], n, pos).astype(np.float64)
            if "BLANK" in cards and bitpix > 0:
                data[data == float(cards["BLANK"])] = np.nan
            data = data * float(cards.get("BSCALE", 1)) + float(cards.get("BZERO", 0))
            planes = data.reshape(-1, axes[1], axes[0]).astype(np.float32)
            for p, plane in enumerate(planes):
                yield f"{os.path.basename(path)}[{hdu}][{p}]", np.ascontiguousarray(plane)
        pos += (nbytes + 2879) // 2880 * 2880
        hdu += 1


def kappa_sigma_clipper(data_flat):  # the lesson's, verbatim in spirit
    while True:
        med = cp.median(data_flat)
        std = cp.std(data_flat)
        clipped_lower = data_flat.compress(data_flat > med - 3 * std)
        clipped_both = clipped_lower.compress(clipped_lower < med + 3 * std)
        if len(clipped_both) == len(data_flat) or len(clipped_both) == 0:  # 0: std 0, the lesson raises
            break
        data_flat = clipped_both
    return data_flat


def pipeline(host, relative_to_median):
    """One image, host in, host catalog out: H2D, clip, segment, label, measure, D2H."""
    data = cp.asarray(host)
    flat = data.ravel()
    clipped = kappa_sigma_clipper(flat[cp.isfinite(flat)])  # NaNs dropped, as imflow does
    std = clipped.std()
    threshold = (cp.median(clipped) + 5 * std) if relative_to_median else 5 * std
    segmented = cp.where(data > threshold, 1, 0)
    labelled, n = label(segmented)
    index = cp.arange(1, n + 1)
    positions = center_of_mass(data, labelled, index)
    fluxes = sum_labels(data, labelled, index)
    return int(n), cp.asnumpy(cp.asarray(positions)), cp.asnumpy(fluxes)


def timed(fn, reps):
    fn()  # warm-up (kernel compilation, memory pool)
    times = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        out = fn()
        cp.cuda.Device().synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    files = []
    for p in args.inputs:
        files += sorted(glob.glob(os.path.join(p, "*.fits"))) if os.path.isdir(p) else [p]
    result = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cupy": cp.__version__,
              "numpy": np.__version__, "reps": args.reps, "images": []}
    images = [(name, img) for f in files for name, img in fits_images(f)]
    isaac = [img for name, img in images if name.startswith("ISAAC")]
    if isaac:  # the 2048x2048 real-like image imflow's benchmark uses: ISAAC tiled 2x2
        images.append(("ISAAC_tiled_2048x2048", np.ascontiguousarray(np.tile(isaac[0], (2, 2))[:2048, :2048])))
    for name, img in images:
        row = {"image": name, "width": img.shape[1], "height": img.shape[0]}
        for key, rel in (("data_gt_5std", False), ("data_gt_median_5std", True)):
            med, best, (n, _, _) = timed(lambda: pipeline(img, rel), args.reps)
            row[key] = {"ms_median": round(med, 3), "ms_min": round(best, 3), "sources": n}
        print(f"{name:44} {img.shape[1]:5}x{img.shape[0]:<5} lesson {row['data_gt_5std']['ms_median']:8.2f} ms "
              f"({row['data_gt_5std']['sources']} src)  median+5std {row['data_gt_median_5std']['ms_median']:8.2f} ms "
              f"({row['data_gt_median_5std']['sources']} src)", flush=True)
        result["images"].append(row)

    # The lesson's convolution benchmark: 2048x2048 deltas by the 15x15 Gaussian, full mode.
    try:
        from cupyx.scipy.signal import convolve2d
        x, y = np.meshgrid(np.linspace(-2, 2, 15), np.linspace(-2, 2, 15))
        gauss = np.exp(-(x ** 2 + y ** 2) / 2)
        deltas = np.zeros((2048, 2048)); deltas[8::16, 8::16] = 1
        conv = {}
        for dtype in (np.float64, np.float32):
            d, g = cp.asarray(deltas, dtype), cp.asarray(gauss, dtype)
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
            convolve2d(d, g); times = []
            for _ in range(10):
                ev0.record(); convolve2d(d, g); ev1.record(); ev1.synchronize()
                times.append(cp.cuda.get_elapsed_time(ev0, ev1))
            conv[np.dtype(dtype).name] = {"ms_median": round(statistics.median(times), 4), "ms_min": round(min(times), 4)}
        result["convolve2d_2048_15x15_full"] = conv
        print(f"cupyx convolve2d 2048x2048 15x15 full: {conv}")
    except Exception as e:  # noqa: BLE001
        result["convolve2d_2048_15x15_full"] = {"error": repr(e)}
        print(f"convolve2d: {e!r}")
    text = json.dumps(result, indent=1)
    if args.json:
        open(args.json, "w").write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
