#!/usr/bin/python3
"""Build a large float32 FITS mosaic without holding it in memory (docs/tiling.md).

--from DIR (real data, default datasets/data/astro after datasets/fetch.sh): a grid of cells of
1024 x 1024 pixels, each one the ISAAC VLT near-IR frame (ISAAC.2006-04-13T06-32-38.944.fits,
a dense star field) under one of its 8 flips/rotations, background-matched: each cell has its own
median subtracted and a common sky level (1000) added, so the mosaic has one global background.
The three small real frames (the DSS plate scans dss_test1/dss_test2 and the MIDAS tutorial CCD
galaxy field ccd.fits) are pasted, background-matched the same way, into every 7th/11th/13th cell.
The cell grid is offset by (-371, -229) pixels, so cell edges do not fall on tile edges; the
transform of each cell is a fixed function of its position (reproducible bytes).

--synthetic: a Gaussian-noise sky (1000 +- 30) with Gaussian stars, for CI (no fetched data).

The file is written band by band (1024 rows at a time): memory ~ width x 1024 x 12 bytes.
NumPy only (a minimal reader for the simple primary-HDU inputs), so it runs on the GPU machine.
--wcs: a TAN sky grid in the header (RA 150, Dec 2.2 at the centre, 0.148"/pixel), so that the
catalogs have sky positions, as a survey's mosaic would.

usage: make_mosaic.py OUT.fits [--size WxH] [--from DIR | --synthetic] [--seed N] [--wcs]"""
import argparse
import pathlib
import sys

import numpy as np

CELL = 1024
OFFSET = (-371, -229)
SKY = 1000.0


def read_primary(path):
    """The primary image of a simple FITS file (BITPIX 16/32/-32/-64, BSCALE/BZERO) as float64."""
    raw = open(path, "rb").read()
    cards, offset = {}, 0
    while True:
        block = raw[offset:offset + 2880].decode("ascii")
        offset += 2880
        for i in range(0, 2880, 80):
            key, value = block[i:i + 8].strip(), block[i + 10:i + 80].split("/")[0].strip()
            if key == "END":
                break
            cards.setdefault(key, value)
        else:
            continue
        break
    dtype = {16: ">i2", 32: ">i4", -32: ">f4", -64: ">f8"}[int(cards["BITPIX"])]
    shape = (int(cards["NAXIS2"]), int(cards["NAXIS1"]))
    data = np.frombuffer(raw, dtype=dtype, count=shape[0] * shape[1], offset=offset).reshape(shape)
    return data.astype(np.float64) * float(cards.get("BSCALE", 1)) + float(cards.get("BZERO", 0))


def header_bytes(width, height, cards, numbers=()):
    lines = [("SIMPLE", "T"), ("BITPIX", "-32"), ("NAXIS", "2"), ("NAXIS1", str(width)), ("NAXIS2", str(height))]
    lines += list(numbers)
    text = "".join(f"{k:<8}= {v:>20}".ljust(80) for k, v in lines)
    text += "".join(f"{k:<8}= '{v}'".ljust(80)[:80] for k, v in cards) + "END".ljust(80)
    return (text + " " * ((-len(text)) % 2880)).encode("ascii")


def wcs_cards(width, height):
    """A TAN sky grid centred on the mosaic at ISAAC's 0.148"/pixel, north up, east left: string
    cards and numeric cards for header_bytes."""
    scale = 0.148 / 3600.0
    strings = [("CTYPE1", "RA---TAN"), ("CTYPE2", "DEC--TAN"), ("RADESYS", "ICRS")]
    numbers = [("CRPIX1", repr((width + 1) / 2)), ("CRPIX2", repr((height + 1) / 2)), ("CRVAL1", "150.0"),
               ("CRVAL2", "2.2"), ("CD1_1", repr(-scale).upper()), ("CD1_2", "0.0"), ("CD2_1", "0.0"),
               ("CD2_2", repr(scale).upper()), ("EQUINOX", "2000.0")]
    return strings, numbers


def load_cells(source):
    source = pathlib.Path(source)
    isaac = read_primary(source / "ISAAC.2006-04-13T06-32-38.944.fits")
    bases = []
    for k in range(8):  # the dihedral group: 4 rotations, with and without a flip
        cell = np.rot90(isaac, k % 4)
        if k >= 4:
            cell = cell[:, ::-1]
        cell = cell - np.median(cell) + SKY
        bases.append(np.ascontiguousarray(cell, dtype=np.float32))
    pastes = []
    for name in ("dss_test1.fits", "dss_test2.fits", "ccd.fits"):
        small = read_primary(source / name)
        pastes.append((small - np.median(small) + SKY).astype(np.float32))
    return bases, pastes


def real_cell(bases, pastes, cx, cy):
    cell = bases[(cx * 3 + cy * 5) % 8].copy()
    index = cy * 1000 + cx
    for period, paste in zip((7, 11, 13), pastes):
        if index % period == 0:
            h, w = paste.shape
            y0, x0 = (CELL - h) // 2, (CELL - w) // 3
            cell[y0:y0 + h, x0:x0 + w] = paste
    return cell


def synthetic_band(width, y0, rows, rng):
    band = rng.normal(SKY, 30.0, (rows, width)).astype(np.float32)
    stars = max(1, int(width * rows / 4000))
    xs = rng.uniform(0, width, stars)
    ys = rng.uniform(-8, rows + 8, stars)
    flux = rng.uniform(200.0, 30000.0, stars)
    sig = rng.uniform(0.8, 3.0, stars)
    for x, y, f, s in zip(xs, ys, flux, sig):
        r = int(4 * s) + 1
        x0, x1 = max(0, int(x) - r), min(width, int(x) + r + 1)
        ya, yb = max(0, int(y) - r), min(rows, int(y) + r + 1)
        if x0 >= x1 or ya >= yb:
            continue
        yy, xx = np.mgrid[ya:yb, x0:x1]
        band[ya:yb, x0:x1] += (f * np.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * s * s))).astype(np.float32)
    return band


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size", default="16500x16300", help="WxH (default 16500x16300)")
    parser.add_argument("--from", dest="source", default=str(pathlib.Path(__file__).parent / "data" / "astro"))
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wcs", action="store_true", help="a TAN sky grid in the header (catalogs get ra, dec)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    origin = ("ORIGIN", "imflow datasets/make_mosaic.py")
    mosaic = ("MOSAIC", "synthetic sky 1000+-30 and stars" if args.synthetic else "ESO-MIDAS ISAAC cells + DSS, CCD pastes")
    rng = np.random.default_rng(args.seed)
    bases = pastes = None
    if not args.synthetic:
        try:
            bases, pastes = load_cells(args.source)
        except FileNotFoundError as error:
            sys.exit(f"{error.filename}: not found; run datasets/fetch.sh first (or use --synthetic)")
    with open(args.out, "wb") as out:
        strings, numbers = wcs_cards(width, height) if args.wcs else ([], [])
        out.write(header_bytes(width, height, [origin, mosaic] + strings, numbers))
        for y0 in range(0, height, CELL):
            rows = min(CELL, height - y0)
            if args.synthetic:
                band = synthetic_band(width, y0, rows, rng)
            else:
                band = np.empty((rows, width), dtype=np.float32)
                # Cells overlapping this band, in mosaic coordinates shifted by OFFSET.
                for cy in range((y0 - OFFSET[1]) // CELL, (y0 + rows - 1 - OFFSET[1]) // CELL + 1):
                    cell_y = cy * CELL + OFFSET[1]
                    for cx in range((0 - OFFSET[0]) // CELL, (width - 1 - OFFSET[0]) // CELL + 1):
                        cell_x = cx * CELL + OFFSET[0]
                        cell = real_cell(bases, pastes, cx, cy)
                        ya, yb = max(y0, cell_y), min(y0 + rows, cell_y + CELL)
                        xa, xb = max(0, cell_x), min(width, cell_x + CELL)
                        band[ya - y0:yb - y0, xa:xb] = cell[ya - cell_y:yb - cell_y, xa - cell_x:xb - cell_x]
            out.write(band.astype(">f4").tobytes())
        pad = (-out.tell()) % 2880
        out.write(b"\0" * pad)
    print(f"{args.out}: {width} x {height} float32, {(width * height * 4) / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
