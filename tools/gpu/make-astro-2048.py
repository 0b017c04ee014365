#!/usr/bin/env python3
"""Make OUT/c0..c7/f000..f063.fits: 512 2048x2048 float32 FITS images from a real 1024x1024
float32 frame (the ISAAC image), tiled 2x2 and rolled differently for each of 64 files, each
hard-linked 8 times (the page cache then holds one 1 GiB copy). numpy only (the GPU machines
have no astropy). usage: make_astro_2048.py ISAAC.fits OUT"""
import os
import sys

import numpy as np


def read_float_frame(path, size=1024):
    raw = open(path, "rb").read()
    end = raw.find(b"END" + b" " * 77)  # the END card of the primary header
    start = (end // 2880 + 1) * 2880
    return np.frombuffer(raw[start:start + size * size * 4], dtype=">f4").reshape(size, size)


def main(source, out):
    base = np.tile(read_float_frame(source), (2, 2))
    rng = np.random.default_rng(4)
    cards = ["SIMPLE  =                    T", "BITPIX  =                  -32", "NAXIS   =                    2",
             "NAXIS1  =                 2048", "NAXIS2  =                 2048",
             # A TAN WCS like the ISAAC frame's, so the catalogs' ra/dec cost what real images cost.
             "CTYPE1  = 'RA---TAN'", "CTYPE2  = 'DEC--TAN'", "CRPIX1  =               1024.5",
             "CRPIX2  =               1024.5", "CRVAL1  =            265.20907", "CRVAL2  =            -30.86916",
             "CD1_1   =          4.12222E-05", "CD1_2   =                  0.0", "CD2_1   =                  0.0",
             "CD2_2   =         -4.12222E-05", "RADESYS = 'FK5'", "EQUINOX =               2000.0", "END"]
    header = "".join(f"{card:<80}" for card in cards).ljust(2880).encode()
    unique = os.path.join(out, "u")
    os.makedirs(unique, exist_ok=True)
    for i in range(64):
        shift = (int(rng.integers(2048)), int(rng.integers(2048)))
        data = np.roll(base, shift, axis=(0, 1)).astype(">f4").tobytes()
        with open(f"{unique}/f{i:03d}.fits", "wb") as f:
            f.write(header + data + b"\0" * (-len(data) % 2880))
    for copy in range(8):
        os.makedirs(f"{out}/c{copy}", exist_ok=True)
        for i in range(64):
            os.link(f"{unique}/f{i:03d}.fits", f"{out}/c{copy}/f{i:03d}.fits")
    for name in os.listdir(unique):
        os.remove(os.path.join(unique, name))
    os.rmdir(unique)


if __name__ == "__main__":
    main(*sys.argv[1:3])
