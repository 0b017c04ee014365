# imflow.sep's aperture functions against SEP 1.4.1 on sep.extract's objects of isaac_crop.fits:
# sums within 1e-9 relative (exact overlap differs only by rounding), identical flags,
# kron_radius, flux_radius and winpos within 1e-6.
import numpy as np
import pytest

import imflow.sep as isep
from conftest import native

sep = pytest.importorskip("sep")


@pytest.fixture(scope="module")
def field(images):
    data = native(images["isaac_crop"])
    bkg = sep.Background(data)
    sub = data - bkg
    objects = sep.extract(sub, 1.5, err=bkg.rms(), filter_kernel=None)
    x, y, a, b, theta = (np.asarray(objects[f], dtype=np.float64) for f in ("x", "y", "a", "b", "theta"))
    keep = np.isfinite(a) & np.isfinite(b)
    mask = np.zeros(data.shape, dtype=bool)
    mask[55:60, 60:72] = True  # part of one object and some annuli
    return dict(sub=sub, rms=bkg.rms(), mask=mask, x=x[keep], y=y[keep], a=a[keep], b=b[keep], theta=theta[keep])


def same(ours, theirs, rel):
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        mine, reference = np.asarray(mine), np.asarray(reference)
        assert mine.shape == reference.shape
        if reference.dtype.kind == "i":
            assert mine.dtype == reference.dtype
            np.testing.assert_array_equal(mine, reference)
        else:
            np.testing.assert_allclose(mine, reference, rtol=rel, atol=0)


NOISE = [dict(), dict(err="rms", gain=2.5), dict(var="rms"), dict(err=3.0, mask="mask"),
         dict(err="rms", gain=2.5, mask="mask", maskthresh=0.5)]


def options(f, noise, subpix):
    kw = {k: f["rms"] ** 2 if k == "var" else f[v] if isinstance(v, str) else v for k, v in noise.items()}
    kw["subpix"] = subpix
    return kw


@pytest.mark.parametrize("subpix", [0, 1, 5])
@pytest.mark.parametrize("noise", NOISE)
def test_sums(field, noise, subpix):
    f, kw = field, options(field, noise, subpix)
    x, y, a, b, t = f["x"], f["y"], f["a"], f["b"], f["theta"]
    calls = [
        ("sum_circle", (x, y, 3.0), {}),
        ("sum_circle", (x, y, np.linspace(1.0, 8.0, len(x))), {}),
        ("sum_circann", (x, y, 3.0, 6.0), {}),
        ("sum_ellipse", (x, y, a, b, t, 2.5), {}),
        ("sum_ellipann", (x, y, a, b, t, 2.0, 4.0), {}),
        ("sum_circle", (x, y, 3.0), dict(bkgann=(6.0, 9.0))),
        ("sum_ellipse", (x, y, a, b, t, 2.5), dict(bkgann=(4.0, 6.0))),
    ]
    for name, args, extra in calls:
        same(getattr(isep, name)(f["sub"], *args, **kw, **extra),
             getattr(sep, name)(f["sub"], *args, **kw, **extra), 1e-9)


def test_broadcasting_and_scalars(field):
    f = field
    x, y = f["x"][:5], f["y"][:5]
    radii = np.array([[1.5], [3.0], [5.0]])  # (3, 1) x (5,) -> (3, 5)
    same(isep.sum_circle(f["sub"], x, y, radii, err=f["rms"]), sep.sum_circle(f["sub"], x, y, radii, err=f["rms"]),
         1e-9)
    # SEP 1.4.1 fails on scalar x (len() of a 0-d array); imflow gives 0-d arrays, SEP's 1-element values
    ours = isep.sum_circle(f["sub"], x[0], y[0], 3.0, err=f["rms"])
    theirs = sep.sum_circle(f["sub"], x[:1], y[:1], 3.0, err=f["rms"])
    assert all(np.ndim(v) == 0 for v in ours)
    same([np.atleast_1d(v) for v in ours], theirs, 1e-9)
    kr = isep.kron_radius(f["sub"], x[0], y[0], f["a"][0], f["b"][0], f["theta"][0], 6.0)
    same([np.atleast_1d(v) for v in kr],
         sep.kron_radius(f["sub"], x[:1], y[:1], f["a"][:1], f["b"][:1], f["theta"][:1], 6.0), 1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_kron_flux_radius_winpos(field, masked):
    f = field
    x, y, a, b, t = f["x"], f["y"], f["a"], f["b"], f["theta"]
    kw = dict(mask=f["mask"]) if masked else {}
    kron = sep.kron_radius(f["sub"], x, y, a, b, t, 6.0, **kw)
    same(isep.kron_radius(f["sub"], x, y, a, b, t, 6.0, **kw), kron, 1e-6)
    flux = sep.sum_ellipse(f["sub"], x, y, a, b, t, 2.5 * kron[0], subpix=1)[0]
    for frac, normflux in (([0.5, 0.9], None), (0.5, flux), (np.array([[0.2, 0.5], [0.8, 0.95]]), flux)):
        same(isep.flux_radius(f["sub"], x, y, 6.0 * a, frac, normflux=normflux, **kw),
             sep.flux_radius(f["sub"], x, y, 6.0 * a, frac, normflux=normflux, **kw), 1e-6)
    sig = 2.0 / 2.35 * sep.flux_radius(f["sub"], x, y, 6.0 * a, 0.5, normflux=flux, subpix=5)[0]
    for subpix in (0, 11):
        same(isep.winpos(f["sub"], x, y, sig, subpix=subpix, **kw),
             sep.winpos(f["sub"], x, y, sig, subpix=subpix, **kw), 1e-6)


def test_kron_radius_of_degenerate_ellipses(field):
    # b = 0 (a line) and a = b = 0: SEP finds no pixel inside (radius 0, APER_ALLMASKED).
    f = field
    x, y = f["x"][:3], f["y"][:3]
    a, b, t = np.array([3.0, 0.0, 2.0]), np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.0, 0.0])
    kron = sep.kron_radius(f["sub"], x, y, a, b, t, 6.0)
    assert list(kron[1][:2]) == [isep.APER_ALLMASKED] * 2 and np.all(kron[0][:2] == 0)
    same(isep.kron_radius(f["sub"], x, y, a, b, t, 6.0), kron, 1e-6)


def test_ellipse_helpers(field):
    f = field
    coeffs = sep.ellipse_coeffs(f["a"], f["b"], f["theta"])
    same(isep.ellipse_coeffs(f["a"], f["b"], f["theta"]), coeffs, 1e-15)
    same(isep.ellipse_axes(*coeffs), sep.ellipse_axes(*coeffs), 1e-15)
    with pytest.raises(ValueError):
        isep.ellipse_axes(1.0, 1.0, 3.0)
    ours, theirs = np.zeros(f["sub"].shape, bool), np.zeros(f["sub"].shape, bool)
    isep.mask_ellipse(ours, f["x"], f["y"], f["a"], f["b"], f["theta"], r=3.0)
    sep.mask_ellipse(theirs, f["x"], f["y"], f["a"], f["b"], f["theta"], r=3.0)
    np.testing.assert_array_equal(ours, theirs)
    ours[:], theirs[:] = False, False
    isep.mask_ellipse(ours, f["x"], f["y"], cxx=coeffs[0], cyy=coeffs[1], cxy=coeffs[2], r=2.0)
    sep.mask_ellipse(theirs, f["x"], f["y"], cxx=coeffs[0], cyy=coeffs[1], cxy=coeffs[2], r=2.0)
    np.testing.assert_array_equal(ours, theirs)


def test_errors_and_constants(field):
    f = field
    for name in ("APER_TRUNC", "APER_HASMASKED", "APER_ALLMASKED", "APER_NONPOSITIVE"):
        assert getattr(isep, name) == getattr(sep, name) and type(getattr(isep, name)) is type(getattr(sep, name))
    with pytest.raises(ValueError, match="seg_id"):
        isep.sum_circle(f["sub"], f["x"], f["y"], 3.0, segmap=np.zeros(f["sub"].shape))
    with pytest.raises(ValueError, match="seg_id"):
        isep.sum_circle(f["sub"], f["x"], f["y"], 3.0, seg_id=[1, 2], segmap=np.zeros(f["sub"].shape))
    with pytest.raises(ValueError):
        isep.sum_circle(f["sub"], f["x"], f["y"], -1.0)
    with pytest.raises(ValueError, match="background annulus"):
        isep.sum_circle(f["sub"], f["x"], f["y"], 3.0, bkgann=(6.0, 9.0), mask=np.ones(f["sub"].shape, bool))
    # An aperture of its own NaN or masked pixels (its annulus valid) is that object's NaN, as in SEP,
    # not an error for all of them.
    x, y = f["x"][:3], f["y"][:3]
    holed = f["sub"].copy()
    holed[int(round(y[0])), int(round(x[0]))] = np.nan
    same(isep.sum_circle(holed, x, y, 3.0, bkgann=(6.0, 9.0)), sep.sum_circle(holed, x, y, 3.0, bkgann=(6.0, 9.0)), 1e-9)
    covered = np.zeros(f["sub"].shape, bool)
    covered[int(round(y[1])) - 4:int(round(y[1])) + 5, int(round(x[1])) - 4:int(round(x[1])) + 5] = True
    for name, args in (("sum_circle", (x, y, 3.0)), ("sum_ellipse", (x, y, f["a"][:3], f["b"][:3], f["theta"][:3], 1.0))):
        ours = getattr(isep, name)(f["sub"], *args, mask=covered, bkgann=(6.0, 9.0) if name == "sum_circle" else (5.0, 7.0))
        theirs = getattr(sep, name)(f["sub"], *args, mask=covered, bkgann=(6.0, 9.0) if name == "sum_circle" else (5.0, 7.0))
        same(ours, theirs, 1e-9)
        assert np.isnan(ours[0][1]) and np.isfinite(ours[0][0])
    # a big-endian image is taken as it is
    big = f["sub"].astype(">f4")
    assert big.dtype.byteorder == ">"
    same(isep.sum_circle(big, f["x"], f["y"], 3.0), sep.sum_circle(f["sub"], f["x"], f["y"], 3.0), 1e-9)


@pytest.mark.parametrize("sign", [1, -1])
def test_segmentation_map_masking(images, sign):
    data = native(images["isaac_crop"])
    bkg = sep.Background(data)
    sub = data - bkg
    objects, segmap = sep.extract(sub, 1.5, err=bkg.rms(), segmentation_map=True)
    keep = np.isfinite(objects["a"]) & np.isfinite(objects["b"])
    x, y, a, b, theta = (np.asarray(objects[f][keep], dtype=np.float64) for f in ("x", "y", "a", "b", "theta"))
    seg_id = sign * (np.flatnonzero(keep) + 1).astype(np.int32)
    seg = dict(seg_id=seg_id, segmap=segmap)
    mask = np.zeros(sub.shape, bool)
    mask[55:60, 60:72] = True
    for extra in (dict(), dict(err=bkg.rms(), mask=mask)):
        for fn, args in ((isep.sum_circle, (x, y, 4.0)), (isep.sum_circann, (x, y, 2.0, 5.0)),
                         (isep.sum_ellipse, (x, y, a, b, theta, 2.5)),
                         (isep.sum_ellipann, (x, y, a, b, theta, 1.0, 3.0))):
            ours = fn(sub, *args, subpix=1, **seg, **extra)
            theirs = getattr(sep, fn.__name__)(sub, *args, subpix=1, **seg, **extra)
            same(ours, theirs, 1e-9)
            assert np.any(ours[2] & isep.APER_HASMASKED)
    same(isep.kron_radius(sub, x, y, a, b, theta, 6.0, **seg), sep.kron_radius(sub, x, y, a, b, theta, 6.0, **seg), 1e-6)
    same(isep.flux_radius(sub, x, y, 6.0 * a, [0.25, 0.5], subpix=5, **seg),
         sep.flux_radius(sub, x, y, 6.0 * a, [0.25, 0.5], subpix=5, **seg), 1e-6)



def test_float64_data_as_sep_reads_it(field):
    """SEP 1.4.1 reads float64 data and err/var pixel by pixel as float (its PIXTYPE) and sums them
    in double: on values that need double precision imflow.sep gives SEP's numbers."""
    f = field
    rng = np.random.default_rng(5)
    data = f["sub"].astype(np.float64) + 1000.0 + rng.uniform(-1e-4, 1e-4, f["sub"].shape)
    err = f["rms"].astype(np.float64) * (1.0 + rng.uniform(-1e-9, 1e-9, f["rms"].shape))
    assert not np.array_equal(data, data.astype(np.float32)) and not np.array_equal(err, err.astype(np.float32))
    x, y, a, b, t = f["x"], f["y"], f["a"], f["b"], f["theta"]
    calls = [
        ("sum_circle", (x, y, 3.0), dict(err=err, gain=2.5)),
        ("sum_circle", (x, y, 3.0), dict(var=err * err, subpix=0, bkgann=(6.0, 9.0))),
        ("sum_ellipse", (x, y, a, b, t, 2.5), dict(err=err, mask=f["mask"])),
        ("sum_ellipann", (x, y, a, b, t, 2.0, 4.0), dict(err=err, subpix=1)),
    ]
    for name, args, kw in calls:
        same(getattr(isep, name)(data, *args, **kw), getattr(sep, name)(data, *args, **kw), 1e-12)
    same(isep.kron_radius(data, x, y, a, b, t, 6.0), sep.kron_radius(data, x, y, a, b, t, 6.0), 1e-12)
    rmax = np.full_like(x, 6.0)
    same(isep.flux_radius(data - 1000.0, x, y, rmax, [0.25, 0.5]),
         sep.flux_radius(data - 1000.0, x, y, rmax, [0.25, 0.5]), 1e-12)
    same(isep.winpos(data - 1000.0, x, y, np.full_like(x, 1.5)), sep.winpos(data - 1000.0, x, y, np.full_like(x, 1.5)),
         1e-12)
