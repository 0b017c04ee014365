"""Splits FITS inputs into one 2-D float32 image per file (every image HDU, every cube plane), as
imflow reads them (physical values BZERO + BSCALE x raw, BLANK -> NaN), so that imflow, SExtractor,
SEP and photutils all see the same pixels. Usage: prepare_images.py OUTDIR INPUT... (files/dirs)"""
import glob
import os
import sys

import numpy as np
from astropy.io import fits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_fits_float32  # noqa: E402


def inputs(paths):
    for path in paths:
        if os.path.isdir(path):
            for pattern in ("*.fits", "*.fit", "*.fits.fz", "*.fits.gz"):
                yield from sorted(glob.glob(os.path.join(path, pattern)))
        elif os.path.isfile(path):
            yield path
        else:
            raise SystemExit(f"{path}: no such file or directory")


def planes(path):
    """(suffix, 2-D float32 plane) for every image plane of the file, named as imflow names them."""
    with fits.open(path, memmap=False) as hdus:
        for h, hdu in enumerate(hdus):
            if not hdu.is_image or hdu.data is None or hdu.data.ndim < 2:
                continue
            data = np.asarray(hdu.data, dtype=np.float32)
            stack = data.reshape((-1,) + data.shape[-2:])
            for p, plane in enumerate(stack):
                suffix = (f".hdu{h}" if h > 0 else "") + (f".p{p}" if stack.shape[0] > 1 else "")
                yield suffix, plane


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    count = 0
    for path in inputs(sys.argv[2:]):
        stem = os.path.basename(path).split(".fits")[0].split(".fit")[0]
        try:
            for suffix, plane in planes(path):
                write_fits_float32(os.path.join(out, f"{stem}{suffix}.fits"), plane,
                                   {"SRCFILE": os.path.basename(path)[:60]})
                count += 1
        except OSError as exc:
            raise SystemExit(f"{path}: cannot read FITS: {exc}") from exc
    print(f"prepare_images: {count} 2-D images in {out}")


if __name__ == "__main__":
    main()
