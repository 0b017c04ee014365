"""Synthetic star fields with known truth: Gaussian or Moffat PSF, power-law fluxes, a sky plane
(gradient), Poisson + read noise (gain 1 e-/adu), seeded. Writes OUT/star_<size>_<psf>.fits
(BITPIX -32) and .truth.csv (x, y 0-based; flux_total; flux_image = rendered flux inside the image;
snr = flux / sqrt(flux + A_eff (sky + rn^2)), A_eff the PSF's noise-equivalent area). NumPy only.
--crowded writes OUT/crowd_<size>_<psf> instead: a grid of --cell px cells, each holding a close
pair of stars (separation uniform in 2-8 px, secondary/primary flux ratio one of PAIR_RATIOS) or,
with probability --galaxies, a PSF-convolved Sersic galaxy (n 1 or 4) with 0-3 point-like knots;
the truth CSV adds kind (0 primary, 1 secondary, 2 galaxy; knots are not truth objects),
separation, flux_ratio and r_e (galaxies' half-light radius, px).
Usage: make_starfield.py --out DIR --size 1024 [--size 2048 ...] [--psf gauss --psf moffat] [--crowded]"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_fits_float32  # noqa: E402

SUB = 3  # sub-samples per pixel side when rendering the PSF
PAIR_RATIOS = (1.0, 0.5, 0.2, 0.1, 0.03, 0.01)  # secondary / primary flux in crowded fields


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
    name = f"star_{size}_{psf}"
    columns = {"x": x, "y": y, "flux_total": flux, "flux_image": flux_image}
    meta = {"flux_min": args.flux_min, "flux_max": args.flux_max, "alpha": args.alpha}
    write_field(name, stars, columns, area, seed, rng, psf, args, out_dir, meta)
    return name


def write_field(name, stars, columns, area, seed, rng, psf, args, out_dir, meta):
    """Adds the sky plane and the noise to the rendered sources and writes NAME.fits, the truth
    CSV (columns, with snr from A_eff = area, or the column's own A_eff) and NAME.truth.json."""
    size = stars.shape[0]
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / np.float32(size)
    sky = args.sky + args.gradient_x * xx + args.gradient_y * yy
    del xx, yy
    image = np.empty((size, size), dtype=np.float32)
    band = 512
    for row in range(0, size, band):  # in bands: bounded memory on 8k x 8k fields
        lam = (sky[row:row + band] + stars[row:row + band]).astype(np.float64)
        image[row:row + band] = rng.poisson(lam) + rng.normal(0.0, args.read_noise, lam.shape)
    x, y, flux = columns["x"], columns["y"], columns["flux_total"]
    sky_at = args.sky + args.gradient_x * (x / size) + args.gradient_y * (y / size)
    snr = flux / np.sqrt(flux + columns.pop("a_eff", area) * (sky_at + args.read_noise ** 2))
    columns["snr"] = snr
    write_fits_float32(os.path.join(out_dir, name + ".fits"), image,
                       {"PSF": psf, "FWHM": args.fwhm, "SEED": seed, "NSTARS": len(x)})
    order = np.lexsort((x, y))
    with open(os.path.join(out_dir, name + ".truth.csv"), "w") as handle:
        handle.write(",".join(columns) + "\n")
        for i in order:
            handle.write(",".join(f"{v[i]:.4f}" if k in ("x", "y") else f"{v[i]:.3f}" if k != "kind"
                                  else str(int(v[i])) for k, v in columns.items()) + "\n")
    meta.update({"size": size, "psf": psf, "fwhm": args.fwhm,
                 "beta": args.beta if psf == "moffat" else None, "seed": seed, "stars": len(x),
                 "noise_equivalent_area": area, "sky": args.sky, "gradient_x": args.gradient_x,
                 "gradient_y": args.gradient_y, "read_noise": args.read_noise, "gain": 1.0})
    with open(os.path.join(out_dir, name + ".truth.json"), "w") as handle:
        json.dump(meta, handle, indent=1)


def sersic_stamp(n, r_e, q, angle, dx, dy, half, psf_f):
    """A unit-flux Sersic profile (index n, half-light radius r_e, axis ratio q, position angle)
    centred dx, dy px from the stamp's centre pixel, SUB x SUB sampled, convolved with the PSF
    (FFT, padded); (2 half + 1)^2 pixels summing to 1."""
    width = 2 * half + 1
    sub = (np.arange(width * SUB) + 0.5) / SUB - half - 0.5
    yy, xx = np.meshgrid(sub - dy, sub - dx, indexing="ij")
    u = xx * np.cos(angle) + yy * np.sin(angle)
    v = (-xx * np.sin(angle) + yy * np.cos(angle)) / q
    b_n = 2 * n - 1 / 3 + 4 / (405 * n) + 46 / (25515 * n * n)
    fine = np.exp(-b_n * (np.hypot(u, v) / r_e) ** (1 / n))
    galaxy = fine.reshape(width, SUB, width, SUB).sum(axis=(1, 3))
    offsets = np.arange(-half, half + 1)
    kernel = psf_f(offsets[None, :] ** 2 + offsets[:, None] ** 2)
    pad = 2 * width
    conv = np.fft.irfft2(np.fft.rfft2(galaxy, (pad, pad)) * np.fft.rfft2(kernel, (pad, pad)), (pad, pad))
    stamp = conv[half:half + width, half:half + width]
    return stamp / stamp.sum()


def make_crowded(size: int, psf: str, args, out_dir: str) -> str:
    """Close pairs and knotty galaxies, one per cell (see the module's docstring)."""
    seed = args.seed * 1_000_003 + size * 13 + (psf == "moffat") + 2
    rng = np.random.default_rng(seed)
    f, area = profile(psf, args.fwhm, args.beta)
    cells = size // args.cell
    centre = (np.arange(cells) + 0.5) * args.cell - 0.5
    cy, cx = (v.ravel() + rng.uniform(-4, 4, v.size) for v in np.meshgrid(centre, centre, indexing="ij"))
    is_galaxy = rng.random(cx.size) < args.galaxies
    stars = np.zeros((size, size), dtype=np.float32)
    rows = {k: [] for k in ("x", "y", "flux_total", "kind", "separation", "flux_ratio", "r_e", "a_eff")}
    knots = []

    def add(x, y, flux, kind, sep=0.0, ratio=np.nan, r_e=0.0):
        for key, value in zip(rows, (x, y, flux, kind, sep, ratio, r_e, area + 4 * np.pi * r_e ** 2)):
            rows[key].append(value)

    for x0, y0, galaxy in zip(cx, cy, is_galaxy):
        if not galaxy:
            flux = np.exp(rng.uniform(np.log(args.pair_flux_min), np.log(args.pair_flux_max)))
            sep, ratio, angle = rng.uniform(2, 8), rng.choice(PAIR_RATIOS), rng.uniform(0, np.pi)
            add(x0, y0, flux, 0, sep, ratio)
            add(x0 + sep * np.cos(angle), y0 + sep * np.sin(angle), flux * ratio, 1, sep, ratio)
            continue
        flux = np.exp(rng.uniform(np.log(1e4), np.log(3e5)))
        n, r_e, q = rng.choice((1.0, 4.0)), rng.uniform(1.5, 5.0), rng.uniform(0.4, 1.0)
        angle, half = rng.uniform(0, np.pi), int(min(args.cell // 2 - 6, 4 * r_e + 6))
        knot_flux = rng.uniform(0.03, 0.15, rng.integers(0, 4)) * flux
        ix, iy = int(round(x0)), int(round(y0))
        stamp = sersic_stamp(n, r_e, q, angle, x0 - ix, y0 - iy, half, f) * (flux - knot_flux.sum())
        stars[iy - half:iy + half + 1, ix - half:ix + half + 1] += stamp.astype(np.float32)
        for kf in knot_flux:
            r, phi = rng.uniform(0.5, 1.5) * r_e, rng.uniform(0, 2 * np.pi)
            knots.append((x0 + r * np.cos(phi), y0 + r * np.sin(phi), kf))
        add(x0, y0, flux, 2, r_e=r_e)
    columns = {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}
    radius = int(stamp_radius(psf, np.array([1e5]))[0])
    point = columns["kind"] < 2
    for xs, ys, fl in ((columns["x"][point], columns["y"][point], columns["flux_total"][point]),
                       tuple(np.array(knots).reshape(-1, 3).T)):
        if len(xs):
            render(stars, xs, ys, fl, radius, f)
    columns["flux_image"] = columns["flux_total"].copy()  # every object lies well inside the image
    name = f"crowd_{size}_{psf}"
    order = ("x", "y", "flux_total", "flux_image", "kind", "separation", "flux_ratio", "r_e", "a_eff")
    meta = {"cell": args.cell, "galaxy_fraction": args.galaxies, "knots": len(knots),
            "pair_flux_min": args.pair_flux_min, "pair_flux_max": args.pair_flux_max,
            "pair_ratios": PAIR_RATIOS}
    write_field(name, stars, {k: columns[k] for k in order}, area, seed, rng, psf, args, out_dir, meta)
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
    parser.add_argument("--crowded", action="store_true", help="close pairs and galaxies instead")
    parser.add_argument("--cell", type=int, default=40, help="crowded: px per pair or galaxy")
    parser.add_argument("--galaxies", type=float, default=0.2, help="crowded: galaxy fraction")
    parser.add_argument("--pair-flux-min", type=float, default=5e3, help="crowded: primary flux")
    parser.add_argument("--pair-flux-max", type=float, default=5e5)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for size in args.size or [1024]:
        for psf in args.psf or ["gauss"]:
            make = make_crowded if args.crowded else make_field
            print("make_starfield:", make(size, psf, args, args.out), flush=True)


if __name__ == "__main__":
    main()
