#!/usr/bin/python3
"""Float64 NumPy reference for imflow's MRI pipeline (normalize + svd_reconstruct).

  tools/make_mri_reference.py INPUT.png|INPUT.nii[.gz] [...] (--rank K | --energy E)
        [--normalize minmax|zscore|none] [--nonfinite keep|zero] [--axis 2] [--slices FIRST:LAST]
        -o OUT.json [--recon-dir DIR]

Per slice: the same normalization as the `normalize` step ((x - min) / (max - min) over finite
pixels, or z-score with ddof 0; a constant slice becomes zeros; with --nonfinite zero the NaN/Inf
pixels then become 0, as normalize's `nonfinite: zero`), np.linalg.svd (float64,
full_matrices=False), k = rank or the smallest k with cumsum(s^2) >= energy * sum(s^2), and
A_k = U_k diag(s_k) V_k^T. Writes JSON with the first 10 singular values, sigma_k, relative
Frobenius error, PSNR (peak = max(A) - min(A)), energy kept and compression ratio; with
--recon-dir also A (normalized input) and A_k as float64 FITS files for pixel comparisons.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mri_io import nifti_slices, read_nifti, read_png  # noqa: E402


def normalize(a, method):
    finite = np.isfinite(a)
    if method == "none" or not finite.any():
        return a.copy()
    v = a[finite]
    offset, scale = (v.min(), v.max() - v.min()) if method == "minmax" else (v.mean(), v.std())
    out = a.copy()
    out[finite] = 0.0 if scale == 0 else (v - offset) / scale
    return out


def reference(a, rank, energy):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    total = float(np.sum(s**2))
    if rank:
        k = min(rank, len(s))
    else:
        k = 0 if total == 0 else int(np.searchsorted(np.cumsum(s**2), energy * total, side="left")) + 1
        k = min(k, len(s))
    ak = (u[:, :k] * s[:k]) @ vt[:k]
    m, n = a.shape
    diff2, norm2 = float(np.sum((a - ak) ** 2)), float(np.sum(a**2))
    peak = float(a.max() - a.min()) or float(np.abs(a).max())
    mse = diff2 / (m * n)
    return ak, {
        "width": n,
        "height": m,
        "k": k,
        "singular_values_count": len(s),
        "singular_values_first10": [float(x) for x in s[:10]],
        "sigma_k": float(s[k - 1]) if k > 0 else 0.0,
        "rel_frobenius_error": math.sqrt(diff2 / norm2) if norm2 > 0 else 0.0,
        "psnr_db": 10 * math.log10(peak**2 / mse) if mse > 0 else None,
        "energy_kept": float(np.sum(s[:k] ** 2)) / total if total > 0 else 1.0,
        "compression_ratio": k * (m + n + 1) / (m * n),
    }


def write_fits(path, image):
    from astropy.io import fits

    fits.PrimaryHDU(image.astype(np.float64)).writeto(path, overwrite=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--rank", type=int)
    group.add_argument("--energy", type=float)
    parser.add_argument("--normalize", default="minmax", choices=("minmax", "zscore", "none"))
    parser.add_argument("--nonfinite", default="keep", choices=("keep", "zero"))
    parser.add_argument("--axis", type=int, default=2, choices=(0, 1, 2))
    parser.add_argument("--slices", default="", help="FIRST:LAST (inclusive) slices of NIfTI volumes")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--recon-dir", default="")
    args = parser.parse_args()
    if args.recon_dir:
        os.makedirs(args.recon_dir, exist_ok=True)
    items = []
    for path in args.inputs:
        if path.endswith(".png"):
            slices, depth = [(0, read_png(path)[0])], read_png(path)[1]
        else:
            volume, _ = read_nifti(path)
            slices, depth = list(enumerate(nifti_slices(volume, args.axis))), None
            if args.slices:
                first, last = (int(x) for x in args.slices.split(":"))
                slices = slices[first : last + 1]
        for index, image in slices:
            a = normalize(image, args.normalize)
            zeroed = int(np.count_nonzero(~np.isfinite(a)))
            if args.nonfinite == "zero":
                a[~np.isfinite(a)] = 0.0
            ak, item = reference(a, args.rank, args.energy)
            item["zeroed_pixels"] = zeroed if args.nonfinite == "zero" else 0
            item.update({"file": os.path.basename(path), "path": os.path.abspath(path), "slice": index,
                         "bit_depth": depth})
            if args.recon_dir:
                stem = os.path.join(args.recon_dir, f"{os.path.basename(path)}.s{index}")
                write_fits(stem + ".input.fits", a)
                write_fits(stem + ".recon.fits", ak)
                item["input_fits"], item["recon_fits"] = stem + ".input.fits", stem + ".recon.fits"
            items.append(item)
    params = {"rank": args.rank, "energy": args.energy, "normalize": args.normalize, "nonfinite": args.nonfinite,
              "axis": args.axis}
    with open(args.output, "w") as f:
        json.dump({"generator": "tools/make_mri_reference.py (numpy float64)", "numpy": np.__version__,
                   "params": params, "items": items}, f, indent=1)
    print(f"make_mri_reference: {len(items)} slices -> {args.output}")


if __name__ == "__main__":
    main()
