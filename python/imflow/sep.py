"""SEP 1.4's Python API over imflow's kernels: ``import imflow.sep as sep``.

``Background`` is sep.Background (SEP's mesh background, map for map), ``extract`` is
sep.extract (SEP's filters, float32 detection, 8-connected segments, deblending and CLEAN object
for object, SEP's measurements, or the objects of a given segmentation map); the aperture functions (sum_circle, ..., winpos)
are SEP's over imflow's photometry kernels (imflow/_apertures.py). What imflow cannot reproduce raises
NotImplementedError naming the argument; docs/python.md has the table. device="cuda" (or
imflow.set_device("cuda")) runs Background and extract on the GPU through the engine's GPU steps.
"""
import numpy as np

from . import _device_name, _imflow
from ._apertures import _image, _not_background  # noqa: F401  (a C-contiguous float32 image, as SEP converts it)
from ._apertures import (APER_ALLMASKED, APER_HASMASKED, APER_NONPOSITIVE, APER_TRUNC, ellipse_axes,  # noqa: F401
                         ellipse_coeffs, flux_radius, kron_radius, mask_ellipse, sum_circann, sum_circle,
                         sum_ellipann, sum_ellipse, winpos)

__version__ = "1.4.1"  # the SEP API this module implements (sep.__version__ checks)
__all__ = ["Background", "extract", "set_extract_pixstack", "set_sub_object_limit", "get_extract_pixstack",
           "get_sub_object_limit", "OBJ_MERGED", "OBJ_TRUNC", "OBJ_DOVERFLOW", "OBJ_SINGU", "default_kernel",
           "sum_circle", "sum_circann", "sum_ellipse", "sum_ellipann", "kron_radius", "flux_radius", "winpos",
           "ellipse_coeffs", "ellipse_axes", "mask_ellipse", "APER_TRUNC", "APER_HASMASKED", "APER_ALLMASKED",
           "APER_NONPOSITIVE"]

OBJ_MERGED = 1      # the object is one of several a blend was split into
OBJ_TRUNC = 2       # the object touches the image edge
OBJ_DOVERFLOW = 4   # SEP: a pixel buffer overflowed (never set: imflow has no fixed buffers)
OBJ_SINGU = 8       # singular moments: SEP's 1/12 pix^2 was added to x2 and y2
default_kernel = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]], dtype=np.float32)

# SEP's catalog columns and dtypes (sep.extract's structured array).
_FIELDS = [("thresh", "f8"), ("npix", "i8"), ("tnpix", "i8"), ("xmin", "i8"), ("xmax", "i8"), ("ymin", "i8"),
           ("ymax", "i8"), ("x", "f8"), ("y", "f8"), ("x2", "f8"), ("y2", "f8"), ("xy", "f8"), ("errx2", "f8"),
           ("erry2", "f8"), ("errxy", "f8"), ("a", "f8"), ("b", "f8"), ("theta", "f8"), ("cxx", "f8"), ("cyy", "f8"),
           ("cxy", "f8"), ("cflux", "f8"), ("flux", "f8"), ("cpeak", "f8"), ("peak", "f8"), ("xcpeak", "i8"),
           ("ycpeak", "i8"), ("xpeak", "i8"), ("ypeak", "i8"), ("flag", "i2")]
_BIG = np.float32(1e30)  # SEP's BIG: the noise of a masked pixel
_limits = {"pixstack": 300000, "sub_object_limit": 1024}  # SEP's defaults, reported back only


def _mask_of(mask, maskthresh, shape):
    """The pixels sep.extract masks (mask > maskthresh, the mask as float32), or None."""
    if mask is None:
        return None
    _not_background(mask, "mask")
    mask = np.asarray(mask)
    if mask.shape != shape:
        raise ValueError(f"mask: shape {mask.shape} differs from data's {shape}")
    masked = mask.astype(np.float32).astype(np.float64) > float(maskthresh)
    return masked if masked.any() else None


def _masked(data, mask, maskthresh):
    """data (float32) with NaN where the mask is not <= maskthresh (SEP's background compares both
    as float32: a NaN mask value or threshold masks)."""
    if mask is None:
        return data
    _not_background(mask, "mask")
    mask = np.asarray(mask)
    if mask.shape != data.shape:
        raise ValueError(f"mask: shape {mask.shape} differs from data's {data.shape}")
    masked = ~(mask.astype(np.float32) <= np.float32(maskthresh))
    if not masked.any():
        return data
    data = data.copy()
    data[masked] = np.nan
    return data


def _converted(values, dtype, what):
    """A float32 map in `dtype`: floats as they are, integers rounded as SEP writes them ((int)(v + 0.5))."""
    dtype = np.dtype(dtype).newbyteorder("=")
    if dtype.kind == "f":
        return values.astype(dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"{what}: dtype not supported: {dtype}")
    rounded = np.trunc(values.astype(np.float64) + 0.5)
    limits = np.iinfo(dtype)
    finite = rounded[np.isfinite(rounded)]
    if not np.isfinite(rounded).all() or (finite.size and (finite.min() < limits.min or finite.max() > limits.max)):
        raise ValueError(f"{what}: the map's values do not fit dtype {dtype}")
    return rounded.astype(dtype)


_SUBTRACTED_AS_SEP = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32))  # sep_bkg_subarray's


class Background:
    """Spatially variable background and noise, as sep.Background (SEP's mesh method).

    Background(data, mask=None, maskthresh=0.0, bw=64, bh=64, fw=3, fh=3, fthresh=0.0, device=None)
    device: "cpu" or "cuda" (None: imflow.get_device()); the maps are the same on both.
    """

    def __init__(self, data, mask=None, maskthresh=0.0, bw=64, bh=64, fw=3, fh=3, fthresh=0.0, device=None):
        pixels = _masked(_image(data), mask, maskthresh)
        original = np.asarray(data)
        # The maps' dtype by default, as SEP: the data's, float32 for boolean data.
        self._dtype = original.dtype.newbyteorder("=") if original.dtype.kind in "fiu" else np.dtype(np.float32)
        self._shape = pixels.shape
        # A filter size of 0 filters nothing, as 1 (SEP takes it so).
        arguments = (pixels, int(bw), int(bh), int(fw) or 1, int(fh) or 1, float(fthresh))
        if _device_name(device) == "cuda":  # the maps stay on the GPU until asked for
            self._device_maps, self.globalback, self.globalrms = _imflow.mesh_background_gpu(*arguments)
            self._maps = {}
        else:
            back, rms, self.globalback, self.globalrms = _imflow.mesh_background(*arguments)
            self._maps = {"back": back, "rms": rms}

    def _map(self, name):
        """The float32 map `name` ('back' or 'rms'), downloaded from the GPU on first use."""
        if name not in self._maps:
            self._maps[name] = getattr(self._device_maps, name)()
        return self._maps[name]

    def back(self, dtype=None, copy=None):
        """The background map (dtype: that of the data by default, as SEP)."""
        return _converted(self._map("back"), dtype or self._dtype, "back")

    def rms(self, dtype=None):
        """The background RMS map (dtype: that of the data by default, as SEP)."""
        return _converted(self._map("rms"), dtype or self._dtype, "rms")

    def subfrom(self, data):
        """Subtract the background from `data` (float or integer, the original shape) in place;
        integers lose the map rounded as SEP rounds it, and a result their dtype cannot hold (an
        unsigned image below its background) is refused, not wrapped around."""
        if not isinstance(data, np.ndarray) or data.dtype.kind not in "fiu":
            raise ValueError("subfrom: data must be a float or integer array")
        if data.shape != self._shape:
            raise ValueError(f"subfrom: data's shape {data.shape} differs from the background's {self._shape}")
        back = _converted(self._map("back"), data.dtype, "subfrom")
        if data.dtype.kind == "f":
            data -= back
            return
        result = data.astype(np.int64) - back.astype(np.int64)
        limits = np.iinfo(data.dtype)
        if result.size and (result.min() < limits.min or result.max() > limits.max):
            raise ValueError(f"subfrom: the background-subtracted values ({result.min()} to {result.max()}) do not fit "
                             f"dtype {data.dtype}; subtract from a float copy (data - bkg is float32 for it)")
        data[...] = result

    def __array__(self, dtype=None, copy=None):
        """NumPy's view of it (`data - bkg`, np.sqrt(bkg)): the map in the data's dtype where SEP can
        subtract it (float32, float64, int32: the dtype stays, as SEP), else float32, so that NumPy
        computes `data - bkg` of 8- and 16-bit integers in float32 instead of wrapping around."""
        return self.back(dtype or (self._dtype if self._dtype in _SUBTRACTED_AS_SEP else np.float32))

    def __rsub__(self, data):  # `data - bkg` where data is not an array (NumPy's arrays take __array__)
        return np.asarray(data) - self.__array__()


def _noise(err, var, shape):
    """(noise map, is var, err value): what sep.extract thresholds against (var: SEP's float32 sqrt)."""
    if err is not None and var is not None:
        raise ValueError("Cannot specify both err and var")
    name, noise = ("err", err) if err is not None else ("var", var)
    if noise is None:
        return None, False, None
    _not_background(noise, name)
    if np.ndim(noise) == 0:
        value = np.float32(noise)
        return None, False, float(np.sqrt(value) if name == "var" else value)
    noise = _image(noise, name)
    if noise.shape != shape:
        raise ValueError(f"{name}: shape {noise.shape} differs from data's {shape}")
    return noise, name == "var", None


def _kernel(filter_kernel, filter_type):
    if filter_type not in ("matched", "conv"):
        raise ValueError(f"unknown filter_type: {filter_type!r}")
    if filter_kernel is None:
        return None
    kernel = np.ascontiguousarray(np.asarray(filter_kernel), dtype=np.float32)
    if kernel.ndim != 2:
        raise ValueError("filter_kernel must be a 2-d array")
    return kernel


def _given_map(segmentation_map, shape):
    """(labels 1..n in SEP's object order, n) of a given segmentation map: its ids > 0, increasing."""
    segmap = np.asarray(segmentation_map)
    if segmap.shape != shape:
        raise ValueError("size of segmap array must match data")
    ids = np.unique(segmap)
    ids = ids[ids > 0]
    labels = np.where(segmap > 0, np.searchsorted(ids, segmap) + 1, 0).astype(np.int32)
    return np.ascontiguousarray(labels), len(ids)


def extract(data, thresh, err=None, var=None, gain=None, mask=None, maskthresh=0.0, minarea=5,
            filter_kernel=default_kernel, filter_type="matched", deblend_nthresh=32, deblend_cont=0.005,
            clean=True, clean_param=1.0, segmentation_map=False, device=None):
    """Extract sources as sep.extract: SEP's structured array (and segmentation map when asked).

    filter_kernel (default: SEP's default_kernel) filters the detection as SEP does ('matched' with
    an err or var array, else 'conv'); segmentation_map=<array> measures the given map's objects.
    device: "cpu" or "cuda" (None: imflow.get_device()); "cuda" measures no given segmentation map
    (NotImplementedError).
    """
    kernel = _kernel(filter_kernel, filter_type)
    given = isinstance(segmentation_map, np.ndarray)
    cuda = _device_name(device) == "cuda"
    if cuda and given:
        raise NotImplementedError("segmentation_map: measuring a given segmentation map runs on the CPU only "
                                  "(device='cpu')")
    pixels = _image(data)
    noise_map, noise_is_var, err_value = _noise(err, var, pixels.shape)
    masked = _mask_of(mask, maskthresh, pixels.shape)
    if masked is not None:  # SEP: masked pixels are 0 and their noise BIG
        pixels = pixels.copy()
        pixels[masked] = 0.0
        if noise_map is not None:
            noise_map = noise_map.copy()
            noise_map[masked] = _BIG
    if int(deblend_nthresh) < 1:
        raise ValueError("deblend_nthresh must be >= 1")
    if int(minarea) < 1:  # SEP 1.4.1 takes 0 and then keeps some deblended children of no pixels
        raise ValueError("minarea must be >= 1")
    labels, nlabels = _given_map(segmentation_map, pixels.shape) if given else (None, 0)
    columns = _imflow.extract(pixels, float(thresh), noise_map, noise_is_var, err_value, float(gain or 0.0),
                              int(minarea), int(deblend_nthresh), float(deblend_cont), bool(clean),
                              float(clean_param), kernel, filter_type == "matched", labels, nlabels, cuda,
                              bool(given or segmentation_map))
    objects = np.empty(len(columns["x"]), dtype=_FIELDS)
    for name, _ in _FIELDS:
        objects[name] = columns[name]
    if given or segmentation_map:
        return objects, columns["segmap"]
    return objects


def set_extract_pixstack(size):
    """Accepted for SEP compatibility: imflow's extraction has no fixed pixel buffer (the value is only reported back)."""
    if int(size) < 1:
        raise ValueError("size must be >= 1")
    _limits["pixstack"] = int(size)


def get_extract_pixstack():
    """The value last given to set_extract_pixstack (SEP's default 300000); imflow does not use it."""
    return _limits["pixstack"]


def set_sub_object_limit(limit):
    """Accepted for SEP compatibility: imflow's deblending has no limit on sub-objects (the value is only reported back)."""
    if int(limit) < 1:
        raise ValueError("limit must be >= 1")
    _limits["sub_object_limit"] = int(limit)


def get_sub_object_limit():
    """The value last given to set_sub_object_limit (SEP's default 1024); imflow does not use it."""
    return _limits["sub_object_limit"]
