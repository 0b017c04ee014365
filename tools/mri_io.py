"""Minimal NumPy readers for the MRI tools: NIfTI-1 (.nii, .nii.gz; both byte orders; the
datatypes imflow reads) and PNG through Pillow (gray, 16-bit, palette/RGB -> BT.601 luminance).
Slices follow imflow's convention: along axis 2 a slice is data[:, :, k] with rows along j."""
import gzip
import struct

import numpy as np

DTYPES = {2: "u1", 4: "i2", 512: "u2", 8: "i4", 16: "f4", 64: "f8"}


def read_nifti(path):
    """Return (volume as array indexed [..., k, j, i] in float64 with scl applied, header dict)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    endian = "<" if struct.unpack("<i", raw[:4])[0] == 348 else ">"
    if struct.unpack(endian + "i", raw[:4])[0] != 348:
        raise ValueError(f"{path}: not a NIfTI-1 file")
    dim = struct.unpack(endian + "8h", raw[40:56])
    datatype = struct.unpack(endian + "h", raw[70:72])[0]
    vox_offset = int(struct.unpack(endian + "f", raw[108:112])[0])
    slope, inter = struct.unpack(endian + "2f", raw[112:120])
    if datatype not in DTYPES:
        raise ValueError(f"{path}: datatype {datatype} not supported")
    shape = [max(1, d) for d in dim[1 : 1 + dim[0]]]
    count = int(np.prod(shape))
    data = np.frombuffer(raw, dtype=endian + DTYPES[datatype], count=count, offset=vox_offset)
    data = data.reshape(shape[::-1]).astype(np.float64)
    if slope != 0 and np.isfinite(slope) and np.isfinite(inter):
        data = data * slope + inter
    while data.ndim < 3:
        data = data[np.newaxis]
    return data, {"dim": shape, "datatype": datatype, "slope": slope, "inter": inter}


def nifti_slices(volume, axis):
    """Yield 2-D slices (rows x columns as imflow reads them) along axis 0 (i), 1 (j) or 2 (k),
    volumes of dims 4..7 outermost."""
    spatial = volume.reshape((-1,) + volume.shape[-3:])  # [t, k, j, i]
    for vol in spatial:
        for s in range(vol.shape[2 - axis]):
            if axis == 2:
                yield vol[s, :, :]
            elif axis == 1:
                yield vol[:, s, :]
            else:
                yield vol[:, :, s]


def read_png(path):
    """Return (image as float64, bit depth 8 or 16)."""
    from PIL import Image

    with Image.open(path) as im:
        if im.mode in ("I;16", "I;16B", "I;16L", "I"):
            return np.asarray(im, dtype=np.float64), 16
        if im.mode in ("L", "1"):
            return np.asarray(im.convert("L"), dtype=np.float64), 8
        if im.mode == "LA":
            return np.asarray(im, dtype=np.float64)[:, :, 0], 8
        rgb = np.asarray(im.convert("RGB"), dtype=np.float64)
        return 0.299 * rgb[:, :, 0] + 0.587 * rgb[:, :, 1] + 0.114 * rgb[:, :, 2], 8
