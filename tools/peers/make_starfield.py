"""Synthetic star fields with known truth: Gaussian or Moffat PSF, power-law fluxes, a sky plane
(gradient), Poisson + read noise (gain 1 e-/adu), seeded. Writes OUT/star_<size>_<psf>.fits
(BITPIX -32) and .truth.csv (x, y 0-based; flux_total; flux_image = rendered flux inside the image;
snr = flux / sqrt(flux + A_eff (sky + rn^2)), A_eff the PSF's noise-equivalent area). NumPy only.
Usage: make_starfield.py --out DIR --size 1024 [--size 2048 ...] [--psf gauss --psf moffat]"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_fits_float32  # noqa: E402

SUB = 3  # sub-samples per pixel side when rendering the PSF


def profile(psf: str, fwhm: float, beta: float):
    """(unit-integral surface brightness f(r^2), noise-equivalent area 1 / integral f^2)."""
    if psf == "gauss":
        s2 = (fwhm / 2.3548200450309493) ** 2
        return (lambda r2: np.exp(-r2 / (2 * s2)) / (2 * np.pi * s2)), 4 * np.pi * s2
    alpha2 = (fwhm / (2 * np.sqrt(2 ** (1 / beta) - 1))) ** 2
    norm = (beta - 1) / (np.pi * alpha2)
    return ((lambda r2: norm * (1 + r2 / alpha2) ** -beta),
            np.pi * alpha2 * (2 * beta - 1) / (beta - 1) ** 2)


def stamp_radius(psf: str, flux: np.ndarray) -> np.ndarray:
    tiers = (6, 10, 16) if psf == "gauss" else (10, 20, 40)
    return np.where(flux < 2e4, tiers[0], np.where(flux < 2e5, tiers[1], tiers[2]))


def render(image: np.ndarray, xs, ys, fluxes, radius: int, f) -> np.ndarray:
    """Adds the stars (pixel-integrated by SUB x SUB sampling) and returns each one's flux inside
    the image."""
    height, width = image.shape
    offsets = np.arange(-radius, radius + 1)
    sub = (np.arange(SUB) + 0.5) / SUB - 0.5
    inside = np.empty(len(xs))
    chunk = max(1, 4_000_000 // ((2 * radius + 1) ** 2 * SUB * SUB))
    for start in range(0, len(xs), chunk):
        x, y, flux = (v[start:start + chunk, None, None] for v in (xs, ys, fluxes))
        px = np.round(x) + offsets[None, None, :]          # (n, 1, w) pixel columns
        py = np.round(y) + offsets[None, :, None]          # (n, h, 1) pixel rows
        value = np.zeros(np.broadcast_shapes(px.shape, py.shape))
        for dy in sub:
            for dx in sub:
                value += f((px + dx - x) ** 2 + (py + dy - y) ** 2)
        value *= flux / (SUB * SUB)
        ix = np.broadcast_to(px, value.shape).astype(np.int64)
        iy = np.broadcast_to(py, value.shape).astype(np.int64)
        ok = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height)
        np.add.at(image, (iy[ok], ix[ok]), value[ok].astype(np.float32))
        inside[start:start + chunk] = (value * ok).sum(axis=(1, 2))
    return inside


def make_field(size: int, psf: str, args, out_dir: str) -> str:
    seed = args.seed * 1_000_003 + size * 7 + (psf == "moffat")
    rng = np.random.default_rng(seed)
    n = int(size * size / args.area_per_star)
    # dN/dF ~ F^-(alpha+1): a Pareto tail from flux_min, capped at flux_max.
    flux = np.minimum(args.flux_min * (1 - rng.random(n)) ** (-1 / args.alpha), args.flux_max)
    x = rng.uniform(-0.5, size - 0.5, n)
    y = rng.uniform(-0.5, size - 0.5, n)
    f, area = profile(psf, args.fwhm, args.beta)
    stars = np.zeros((size, size), dtype=np.float32)
    radius = stamp_radius(psf, flux)
    flux_image = np.empty(n)
    for r in np.unique(radius):
        sel = radius == r
        flux_image[sel] = render(stars, x[sel], y[sel], flux[sel], int(r), f)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / np.float32(size)
    sky = args.sky + args.gradient_x * xx + args.gradient_y * yy
    del xx, yy
    image = np.empty((size, size), dtype=np.float32)
    band = 512
    for row in range(0, size, band):  # in bands: bounded memory on 8k x 8k fields
        lam = (sky[row:row + band] + stars[row:row + band]).astype(np.float64)
        image[row:row + band] = rng.poisson(lam) + rng.normal(0.0, args.read_noise, lam.shape)
    sky_at = args.sky + args.gradient_x * (x / size) + args.gradient_y * (y / size)
    snr = flux / np.sqrt(flux + area * (sky_at + args.read_noise ** 2))
    name = f"star_{size}_{psf}"
    write_fits_float32(os.path.join(out_dir, name + ".fits"), image,
                       {"PSF": psf, "FWHM": args.fwhm, "SEED": seed, "NSTARS": n})
    order = np.lexsort((x, y))
    with open(os.path.join(out_dir, name + ".truth.csv"), "w") as handle:
        handle.write("x,y,flux_total,flux_image,snr\n")
        for i in order:
            handle.write(f"{x[i]:.4f},{y[i]:.4f},{flux[i]:.3f},{flux_image[i]:.3f},{snr[i]:.3f}\n")
    meta = {"size": size, "psf": psf, "fwhm": args.fwhm, "beta": args.beta if psf == "moffat" else None,
            "seed": seed, "stars": n, "noise_equivalent_area": area, "sky": args.sky,
            "gradient_x": args.gradient_x, "gradient_y": args.gradient_y,
            "read_noise": args.read_noise, "gain": 1.0, "flux_min": args.flux_min,
            "flux_max": args.flux_max, "alpha": args.alpha}
    with open(os.path.join(out_dir, name + ".truth.json"), "w") as handle:
        json.dump(meta, handle, indent=1)
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", type=int, action="append", help="side in pixels (repeatable)")
    parser.add_argument("--psf", action="append", choices=("gauss", "moffat"))
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--fwhm", type=float, default=3.0, help="PSF FWHM (px)")
    parser.add_argument("--beta", type=float, default=3.0, help="Moffat beta")
    parser.add_argument("--area-per-star", type=float, default=2000.0, help="px^2 per star")
    parser.add_argument("--flux-min", type=float, default=300.0)
    parser.add_argument("--flux-max", type=float, default=3e5)
    parser.add_argument("--alpha", type=float, default=0.8, help="N(>F) ~ F^-alpha")
    parser.add_argument("--sky", type=float, default=500.0, help="sky at (0, 0) (e-)")
    parser.add_argument("--gradient-x", type=float, default=300.0, help="sky rise across x")
    parser.add_argument("--gradient-y", type=float, default=150.0, help="sky rise across y")
    parser.add_argument("--read-noise", type=float, default=5.0, help="e- rms")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for size in args.size or [1024]:
        for psf in args.psf or ["gauss"]:
            print("make_starfield:", make_field(size, psf, args, args.out), flush=True)


if __name__ == "__main__":
    main()
