"""SEP 1.4.1's aperture functions (sep.sum_circle, ..., winpos, ellipse helpers) over imflow's
kernels; imflow.sep exports them. Arguments, positional order, defaults, broadcasting and return
types are SEP's, segmentation-map masking (seg_id, segmap) included."""
import numpy as np

from . import _imflow

APER_TRUNC = np.short(0x0010)        # the aperture's box leaves the image
APER_HASMASKED = np.short(0x0020)    # a pixel in the aperture was masked
APER_ALLMASKED = np.short(0x0040)    # every pixel was masked (kron_radius)
APER_NONPOSITIVE = np.short(0x0080)  # the Kron moments were <= 0 (kron_radius)


def _not_background(value, name):
    """TypeError, as SEP's, for an imflow.sep.Background given as an array or a number (err=bkg for
    err=bkg.rms() or bkg.globalrms): NumPy would read it as its background map."""
    from .sep import Background
    if isinstance(value, Background):
        raise TypeError(f"{name}: an imflow.sep.Background is not an array or a number: pass bkg.back() (the "
                        f"background map), bkg.rms() or bkg.globalrms (the noise)")


def _image(data, name="data"):
    """A C-contiguous float32 copy-or-view of a non-empty 2-d real array, as SEP converts it (any byte
    order). A NumPy masked array is refused (SEP would silently drop its mask), a Background too."""
    _not_background(data, name)
    if isinstance(data, np.ma.MaskedArray):
        raise ValueError(f"{name}: a masked array; pass its .data and its mask as mask= (np.ma.getmaskarray)")
    array = np.asarray(data)
    if array.ndim != 2:
        raise ValueError(f"{name}: must be a 2-d array, got {array.ndim}-d")
    if array.size == 0:
        raise ValueError(f"{name}: an empty array (shape {array.shape})")
    if not ((np.issubdtype(array.dtype, np.number) and array.dtype.kind != "c") or array.dtype == np.bool_):
        raise ValueError(f"{name}: array dtype not supported: {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _segments(data, x, seg_id, segmap):
    """(segmap as float32, seg_id per object as float64) as SEP checks them, or (None, None)."""
    if segmap is not None and seg_id is None:
        raise ValueError("`segmap` supplied but not `seg_id`.")
    if segmap is None:
        return None, None
    segmap = _image(segmap, "segmap")
    if segmap.shape != data.shape:
        raise ValueError("size of segmap array must match data")
    seg_id = np.require(seg_id, dtype=np.int32)
    if seg_id.shape != np.shape(x):
        raise ValueError("Shapes of `x` and `seg_id` do not match")
    return segmap, seg_id


def _companions(data, err, var, mask):
    """(noise map, noise value, noise kind, mask) as the kernels take them (float32 arrays)."""
    if err is not None and var is not None:
        raise ValueError("Cannot specify both err and var")
    kind, noise = ("err", err) if err is not None else ("var", var) if var is not None else ("none", None)
    noise_map, noise_value = None, 0.0
    if noise is not None:
        _not_background(noise, kind)
        if np.ndim(noise) == 0:
            noise_value = float(noise)
        elif np.ndim(noise) == 2:
            noise_map = _image(noise, kind)
        else:
            raise ValueError("error/variance array must be 0-d or 2-d")
    if mask is not None:
        mask = _image(mask, "mask")
    for name, array in (("err/var", noise_map), ("mask", mask)):
        if array is not None and array.shape != data.shape:
            raise ValueError(f"size of {name} array must match data")
    return noise_map, noise_value, kind, mask


def _params(*values):
    """(shape, (n, k) float64 rows) of the broadcast per-object parameters."""
    arrays = [np.require(v, dtype=np.double) for v in values]
    shape = np.broadcast(*arrays).shape
    rows = np.stack([np.broadcast_to(a, shape).ravel() for a in arrays], axis=1) if arrays else None
    return shape, np.ascontiguousarray(rows, dtype=np.double).reshape(-1, len(arrays))


def _check(condition, what):
    if np.any(condition):
        raise ValueError(f"illegal aperture parameters: {what}")


def _check_ellipse(a, b, theta):
    _check(np.asarray(b) < 0, "b < 0")
    _check(np.asarray(a) < np.asarray(b), "a < b")
    _check(np.abs(np.asarray(theta)) > np.pi / 2, "theta outside [-pi/2, pi/2]")


def _shaped(shape, *arrays):
    return tuple(a.reshape(shape) for a in arrays)


def _sum(kind, data, columns, err, var, gain, mask, maskthresh, seg_id, segmap, subpix):
    data = _image(data)
    noise_map, noise_value, noise_kind, mask = _companions(data, err, var, mask)
    segmap, seg_id = _segments(data, columns[0], seg_id, segmap)
    if int(subpix) < 0:
        raise ValueError("illegal aperture parameters: subpix < 0")
    shape, rows = _params(*columns, *(() if segmap is None else (seg_id,)))
    seg_ids = None if segmap is None else np.ascontiguousarray(rows[:, -1])
    rows = np.ascontiguousarray(rows[:, :len(columns)])
    sums = _imflow.sum_apertures(kind, data, rows, noise_map, noise_value, noise_kind, mask, float(maskthresh),
                                 float(gain or 0.0), int(subpix), segmap, seg_ids)
    return _shaped(shape, *sums)


def sum_circle(data, x, y, r, var=None, err=None, gain=None, mask=None, maskthresh=0.0, seg_id=None, segmap=None,
               bkgann=None, subpix=5):
    """sep.sum_circle: (sum, sumerr, flag) in circles of radius r (bkgann=(rin, rout): minus the
    annulus's mean background)."""
    _check(np.asarray(r) < 0, "r < 0")
    if bkgann is None:
        return _sum("circle", data, (x, y, r), err, var, gain, mask, maskthresh, seg_id, segmap, subpix)
    rin, rout = bkgann
    _check((np.asarray(rin) < 0) | (np.asarray(rout) < np.asarray(rin)), "bkgann: rin < 0 or rout < rin")
    return _sum("circle_bkgann", data, (x, y, r, rin, rout), err, var, gain, mask, maskthresh, seg_id, segmap,
                subpix)


def sum_circann(data, x, y, rin, rout, var=None, err=None, gain=None, mask=None, maskthresh=0.0, seg_id=None,
                segmap=None, subpix=5):
    """sep.sum_circann: (sum, sumerr, flag) in annuli rin..rout."""
    _check((np.asarray(rin) < 0) | (np.asarray(rout) < np.asarray(rin)), "rin < 0 or rout < rin")
    return _sum("circann", data, (x, y, rin, rout), err, var, gain, mask, maskthresh, seg_id, segmap, subpix)


def sum_ellipse(data, x, y, a, b, theta, r=1.0, var=None, err=None, gain=None, mask=None, maskthresh=0.0,
                seg_id=None, segmap=None, bkgann=None, subpix=5):
    """sep.sum_ellipse: (sum, sumerr, flag) in the ellipses (a, b, theta) scaled by r (bkgann=(rin,
    rout): minus the mean of the elliptical annulus, in units of a and b)."""
    _check(np.asarray(r) < 0, "r < 0")
    _check_ellipse(a, b, theta)
    if bkgann is None:
        return _sum("ellipse", data, (x, y, a, b, theta, r), err, var, gain, mask, maskthresh, seg_id, segmap,
                    subpix)
    rin, rout = bkgann
    _check((np.asarray(rin) < 0) | (np.asarray(rout) < np.asarray(rin)), "bkgann: rin < 0 or rout < rin")
    return _sum("ellipse_bkgann", data, (x, y, a, b, theta, r, rin, rout), err, var, gain, mask, maskthresh,
                seg_id, segmap, subpix)


def sum_ellipann(data, x, y, a, b, theta, rin, rout, var=None, err=None, gain=None, mask=None, maskthresh=0.0,
                 seg_id=None, segmap=None, subpix=5):
    """sep.sum_ellipann: (sum, sumerr, flag) in elliptical annuli rin..rout (units of a and b)."""
    _check((np.asarray(rin) < 0) | (np.asarray(rout) < np.asarray(rin)), "rin < 0 or rout < rin")
    _check_ellipse(a, b, theta)
    return _sum("ellipann", data, (x, y, a, b, theta, rin, rout), err, var, gain, mask, maskthresh, seg_id, segmap,
                subpix)


def kron_radius(data, x, y, a, b, theta, r, mask=None, maskthresh=0.0, seg_id=None, segmap=None):
    """sep.kron_radius: (kr, flag), the Kron radius in units of a and b within the ellipse r."""
    data = _image(data)
    mask = _companions(data, None, None, mask)[3]
    segmap, seg_id = _segments(data, x, seg_id, segmap)
    shape, rows = _params(x, y, a, b, theta, r, *(() if segmap is None else (seg_id,)))
    seg_ids = None if segmap is None else np.ascontiguousarray(rows[:, -1])
    rows = np.ascontiguousarray(rows[:, :6])
    return _shaped(shape, *_imflow.kron_radius(data, rows, mask, float(maskthresh), segmap, seg_ids))


def flux_radius(data, x, y, rmax, frac, normflux=None, mask=None, maskthresh=0.0, seg_id=None, segmap=None,
                subpix=5):
    """sep.flux_radius: (radius, flag); radius has shape x.shape + frac.shape."""
    data = _image(data)
    mask = _companions(data, None, None, mask)[3]
    segmap, seg_id = _segments(data, x, seg_id, segmap)
    x, y, rmax = (np.require(v, dtype=np.double) for v in (x, y, rmax))
    frac = np.require(frac, dtype=np.double)
    if y.shape != x.shape or rmax.shape != x.shape:
        raise ValueError("shape of x, y, and r must match")
    if normflux is None:
        normflux = np.full(x.shape, np.nan)
    else:
        normflux = np.require(normflux, dtype=np.double)
        if normflux.shape != x.shape:
            raise ValueError("shape of normflux must match shape of x, y and r")
    _check(int(subpix) < 1, "subpix < 1")
    rows = np.ascontiguousarray(np.stack([v.ravel() for v in (x, y, rmax, normflux)], axis=1)).reshape(-1, 4)
    seg_ids = None if segmap is None else np.ascontiguousarray(seg_id.ravel(), dtype=np.double)
    radius, flag = _imflow.flux_radius(data, rows, np.ascontiguousarray(frac.ravel()), mask, float(maskthresh),
                                       int(subpix), segmap, seg_ids)
    return radius.reshape(x.shape + frac.shape), flag.reshape(x.shape)


def winpos(data, xinit, yinit, sig, mask=None, maskthresh=0.0, subpix=11, minsig=2.0 / 2.35 * 0.5):
    """sep.winpos: (xwin, ywin, flag), SExtractor's windowed positions (sig below minsig is raised to it)."""
    data = _image(data)
    mask = _companions(data, None, None, mask)[3]
    shape, rows = _params(xinit, yinit, sig)
    return _shaped(shape, *_imflow.winpos(data, rows, mask, float(maskthresh), int(subpix), float(minsig)))


def ellipse_coeffs(a, b, theta):
    """sep.ellipse_coeffs: (cxx, cyy, cxy) of the ellipses cxx x^2 + cyy y^2 + cxy x y = 1."""
    a, b, theta = np.broadcast_arrays(*(np.require(v, dtype=np.double) for v in (a, b, theta)))
    c, s = np.cos(theta), np.sin(theta)
    return c * c / (a * a) + s * s / (b * b), s * s / (a * a) + c * c / (b * b), 2.0 * c * s * (1.0 / (a * a) - 1.0 / (b * b))


def ellipse_axes(cxx, cyy, cxy):
    """sep.ellipse_axes: (a, b, theta); ValueError when the coefficients describe no ellipse."""
    cxx, cyy, cxy = (np.array(v, dtype=np.double) for v in np.broadcast_arrays(cxx, cyy, cxy))
    p, q = cxx + cyy, cxx - cyy
    t = np.sqrt(q * q + cxy * cxy)
    bad = (cxx * cyy - cxy * cxy / 4.0 <= 0.0) | (p <= 0.0)
    if bad.any():
        i = np.unravel_index(np.flatnonzero(bad)[0], bad.shape)
        raise ValueError(f"parameters do not describe ellipse: cxx={cxx[i]:f}, cyy={cyy[i]:f}, cxy={cxy[i]:f}")
    a, b = np.sqrt(2.0 / (p - t)), np.sqrt(2.0 / (p + t))
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where((cxy == 0.0) | (q == 0.0), 0.0, np.arctan(cxy / np.where(q == 0.0, 1.0, q)) / 2.0)
    theta = np.where(cxx > cyy, theta + np.pi / 2.0, theta)
    theta = np.where(theta > np.pi / 2.0, theta - np.pi, theta)
    return a, b, theta


def _box(centre, half, size):
    """SEP's pixel box [lo, hi) of centre +- half (C casts), clipped to [0, size)."""
    lo, hi = int(centre - half + 0.5), int(centre + half + 1.4999999)
    return max(lo, 0), min(hi, size)


def mask_ellipse(arr, x, y, a=None, b=None, theta=None, r=1.0, cxx=None, cyy=None, cxy=None):
    """sep.mask_ellipse: set arr (bool or uint8, in place) to True where a pixel's centre lies in an ellipse."""
    if not isinstance(arr, np.ndarray) or not (arr.dtype.type is np.bool_ or arr.dtype.type is np.ubyte):
        raise ValueError(f"Array data type not supported: {getattr(arr, 'dtype', type(arr))}")
    if arr.ndim != 2:
        raise ValueError("array must be 2-d")
    if a is not None and b is not None and theta is not None:
        x, y, a, b, theta, r = np.broadcast_arrays(*(np.require(v, dtype=np.double) for v in (x, y, a, b, theta, r)))
        cxx, cyy, cxy = ellipse_coeffs(a, b, theta)
    elif cxx is not None and cyy is not None and cxy is not None:
        x, y, cxx, cyy, cxy, r = np.broadcast_arrays(*(np.require(v, dtype=np.double)
                                                       for v in (x, y, cxx, cyy, cxy, r)))
    else:
        raise ValueError("Must specify either a, b and theta or cxx, cyy and cxy.")
    h, w = arr.shape
    for x1, y1, c1, c2, c3, r1 in zip(*(v.ravel() for v in (x, y, cxx, cyy, cxy, r))):
        dx = c1 - c3 * c3 / (4.0 * c2)
        dx = r1 / np.sqrt(dx) if dx > 0.0 else 0.0
        dy = c2 - c3 * c3 / (4.0 * c1)
        dy = r1 / np.sqrt(dy) if dy > 0.0 else 0.0
        (x0, x9), (y0, y9) = _box(x1, dx, w), _box(y1, dy, h)
        if x0 >= x9 or y0 >= y9:
            continue
        ddx = np.arange(x0, x9) - x1
        ddy = (np.arange(y0, y9) - y1)[:, None]
        inside = c1 * ddx * ddx + c2 * (ddy * ddy) + c3 * ddx * ddy <= r1 * r1
        arr[y0:y9, x0:x9][inside] = True
