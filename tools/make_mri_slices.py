#!/usr/bin/python3
"""Write 2-D slices of NIfTI volumes as grayscale PNG files (a directory of slices for imflow).

  tools/make_mri_slices.py VOLUME.nii.gz [...] -o DIR [--axis 2] [--count N] [--bit-depth 8|16]
                           [--scale S] [--slices FIRST:LAST]

Slices are taken along --axis (imflow's convention: axis 2 gives data[:, :, k], rows along j)
and written as DIR/<volume>_s<NNN>.png, rounded and clamped to the bit depth after multiplying
by --scale. With --count N, slices are taken round-robin over the volumes, repeating the list
when it is shorter than N (repeats get an _rNN suffix), e.g. 880 slices of 181x217 from ch2.
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mri_io import nifti_slices, read_nifti  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("volumes", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--axis", type=int, default=2, choices=(0, 1, 2))
    parser.add_argument("--count", type=int, default=0, help="total slices to write (0: every slice once)")
    parser.add_argument("--bit-depth", type=int, default=8, choices=(8, 16))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--slices", default="", help="FIRST:LAST (inclusive) slice range of each volume")
    args = parser.parse_args()
    os.makedirs(args.output, exist_ok=True)
    pool = []
    for path in args.volumes:
        volume, _ = read_nifti(path)
        name = os.path.basename(path).split(".nii")[0]
        slices = list(nifti_slices(volume, args.axis))
        first, last = 0, len(slices) - 1
        if args.slices:
            first, last = (int(x) for x in args.slices.split(":"))
        pool += [(name, s, slices[s]) for s in range(first, min(last, len(slices) - 1) + 1)]
    count = args.count or len(pool)
    top = 255 if args.bit_depth == 8 else 65535
    for n in range(count):
        name, s, image = pool[n % len(pool)]
        repeat = n // len(pool)
        values = np.clip(np.round(np.nan_to_num(image) * args.scale), 0, top)
        suffix = f"_r{repeat:02d}" if repeat else ""
        out = os.path.join(args.output, f"{name}_s{s:03d}{suffix}.png")
        if args.bit_depth == 8:
            Image.fromarray(values.astype(np.uint8), mode="L").save(out)
        else:
            Image.fromarray(values.astype(np.uint16), mode="I;16").save(out)
    print(f"make_mri_slices: {count} slices ({args.bit_depth}-bit) in {args.output}")


if __name__ == "__main__":
    main()
