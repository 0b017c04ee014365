#!/usr/bin/python3
"""make_fields.py DIR N SIZE: N small float32 FITS star fields (SIZE x SIZE) for the resume/signal tests."""
import os, sys

import numpy as np
from astropy.io import fits

root, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(os.path.join(root, "sub"), exist_ok=True)
rng = np.random.default_rng(11)
yy, xx = np.mgrid[0:size, 0:size]
for i in range(count):
    image = 100 + 5 * rng.standard_normal((size, size))
    for _ in range(1 + i % 7):
        cx, cy = rng.uniform(8, size - 8, 2)
        image += 800 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 4.5)
    name = os.path.join(root, "sub" if i % 4 == 0 else "", f"f{i:03d}.fits")
    fits.PrimaryHDU(image.astype(np.float32)).writeto(name, overwrite=True)
