# imflow.sep.extract against sep.extract (SEP 1.4.1) with deblending and CLEAN, without a
# filter (test_extract_filter.py: with one): the same objects in the same order, the same
# segmentation map, SEP's columns; and two Python threads extracting at once give the sequential
# results.
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import sep

import imflow.sep as isep
from conftest import native

NAMES = ["isaac_crop", "dss_crop", "crowded_400"]
EXACT = ("npix", "tnpix", "xmin", "xmax", "ymin", "ymax", "xpeak", "ypeak", "xcpeak", "ycpeak")
sep.set_sub_object_limit(4096)
sep.set_extract_pixstack(1000000)


def subtracted(images, name):
    data = native(images[name]).astype(np.float32)
    bkg = sep.Background(data)
    return data - bkg, bkg


def compare(ours, theirs):
    """The worst differences of the float columns; asserts the integer ones equal."""
    ours_objects, ours_map = ours
    theirs_objects, theirs_map = theirs
    assert len(ours_objects) == len(theirs_objects)
    assert np.array_equal(ours_map, theirs_map)
    for field in EXACT:
        assert np.array_equal(ours_objects[field], theirs_objects[field]), field
    # SEP's OBJ_MERGED, OBJ_TRUNC and OBJ_SINGU
    assert np.array_equal(ours_objects["flag"], theirs_objects["flag"])
    worst = {}
    for field in ("x", "y"):
        worst[field] = float(np.max(np.abs(ours_objects[field] - theirs_objects[field]), initial=0))
    for field in ("flux", "cflux", "thresh", "peak", "cpeak", "x2", "y2", "a", "b", "cxx", "cyy"):
        scale = np.maximum(np.abs(theirs_objects[field]), 1e-30)
        worst[field] = float(np.max(np.abs(ours_objects[field] - theirs_objects[field]) / scale, initial=0))
    return worst


CASES = {  # name: (keyword arguments of both extracts, given the image's background)
    "rms_clean": lambda bkg: {"err": bkg.rms(), "clean": True},
    "rms_noclean": lambda bkg: {"err": bkg.rms(), "clean": False},
    "global": lambda bkg: {"err": bkg.globalrms},
    "var_gain": lambda bkg: {"var": bkg.rms() ** 2, "gain": 2.5},
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_extract_equals_seps(images, name, case):
    sub, bkg = subtracted(images, name)
    kwargs = CASES[case](bkg)
    ours = isep.extract(sub, 1.5, filter_kernel=None, segmentation_map=True, **kwargs)
    theirs = sep.extract(sub, 1.5, filter_kernel=None, segmentation_map=True, **kwargs)
    assert ours[0].dtype.names == theirs[0].dtype.names
    for field in ours[0].dtype.names:
        assert ours[0].dtype[field] == theirs[0].dtype[field], field
    worst = compare(ours, theirs)
    print(f"{name} {case}: {len(ours[0])} objects ({int(np.sum(ours[0]['flag'] & 1))} blended), worst {worst}")
    assert len(ours[0]) >= 10
    assert worst["x"] <= 1e-4 and worst["y"] <= 1e-4
    for field in ("flux", "cflux", "thresh", "peak", "cpeak", "x2", "y2", "a", "b", "cxx", "cyy"):
        assert worst[field] <= 1e-5, field
    # SEP's errx2, erry2: from err (squared) or var, plus the Poisson term with a gain
    for field in ("errx2", "erry2"):
        assert np.allclose(ours[0][field], theirs[0][field], rtol=1e-5, atol=0), field


def test_absolute_threshold_and_mask(images):
    sub, bkg = subtracted(images, "crowded_400")
    mask = np.zeros(sub.shape, bool)
    mask[100:180, 50:300] = True
    thresh = 3 * bkg.globalrms
    ours = isep.extract(sub, thresh, mask=mask, filter_kernel=None, segmentation_map=True)
    theirs = sep.extract(sub, thresh, mask=mask, filter_kernel=None, segmentation_map=True)
    worst = compare(ours, theirs)
    assert worst["x"] <= 1e-4 and worst["flux"] <= 1e-5
    assert not np.any(ours[1][mask])
    assert np.all(ours[0]["errx2"] == 0) and np.all(theirs[0]["errx2"] == 0)  # no err: SEP's zero errors


def test_inputs_as_sep_takes_them(images):
    data = native(images["isaac_crop"])
    bkg = sep.Background(data)
    sub = (data - bkg).astype(np.float64)
    theirs = sep.extract(sub, 1.5, err=bkg.rms(), filter_kernel=None)
    for variant in (sub, np.asfortranarray(sub), sub.astype(">f8")):
        ours = isep.extract(variant, 1.5, err=bkg.rms(), filter_kernel=None)
        assert np.array_equal(ours["x"], theirs["x"]) or np.max(np.abs(ours["x"] - theirs["x"])) <= 1e-4
        assert np.array_equal(ours["npix"], theirs["npix"])


def test_argument_errors_and_limits(images):
    sub, bkg = subtracted(images, "isaac_crop")
    with pytest.raises(ValueError, match="both err and var"):
        isep.extract(sub, 1.5, err=1.0, var=1.0, filter_kernel=None)
    with pytest.raises(ValueError, match="filter_type"):
        isep.extract(sub, 1.5, err=1.0, filter_type="gauss")
    with pytest.raises(ValueError, match="^minarea must be >= 1$"):  # named as extract's argument, not a step's
        isep.extract(sub, 1.5, err=1.0, minarea=0)
    old = isep.get_extract_pixstack()
    isep.set_extract_pixstack(10**6)
    assert isep.get_extract_pixstack() == 10**6
    isep.set_extract_pixstack(old)
    isep.set_sub_object_limit(4096)
    assert isep.get_sub_object_limit() == 4096


def test_a_background_object_is_neither_a_map_nor_a_number(images):
    """err=bkg, where bkg.rms() or bkg.globalrms was meant: a TypeError, as in SEP, not the level map."""
    data = native(images["isaac_crop"]).astype(np.float32)
    bkg = isep.Background(data)
    sub, x = data - bkg, np.array([101.5])
    calls = [("err", lambda: isep.extract(sub, 1.5, err=bkg)), ("var", lambda: isep.extract(sub, 1.5, var=bkg)),
             ("mask", lambda: isep.extract(sub, 1.5, err=1.0, mask=bkg)),
             ("err", lambda: isep.sum_circle(sub, x, x, 3.0, err=bkg)),
             ("var", lambda: isep.sum_circann(sub, x, x, 2.0, 4.0, var=bkg)),
             ("mask", lambda: isep.Background(data, mask=bkg)), ("data", lambda: isep.extract(bkg, 1.5, err=1.0))]
    for name, call in calls:
        with pytest.raises(TypeError, match=f"^{name}: an imflow.sep.Background is not an array or a number"):
            call()
    with pytest.raises(TypeError, match="sep.Background"):
        sep.sum_circle(sub, x, x, 3.0, err=sep.Background(data))


def test_empty_arrays_are_refused(images):
    """SEP raises IndexError (out of bounds on buffer access); imflow a ValueError naming the shape."""
    for shape in ((0, 0), (0, 5), (5, 0)):
        empty = np.zeros(shape, np.float32)
        for call in (lambda: isep.extract(empty, 1.5, err=1.0), lambda: isep.Background(empty),
                     lambda: isep.sum_circle(empty, np.array([1.0]), np.array([1.0]), 1.0)):
            with pytest.raises(ValueError, match="^" + re.escape(f"data: an empty array (shape {shape})")):
                call()
        with pytest.raises(IndexError):
            sep.extract(empty, 1.5, err=1.0)


def test_two_threads_give_the_sequential_results(images):
    jobs = []
    for name in ("crowded_400", "isaac_crop"):
        sub, bkg = subtracted(images, name)
        jobs.append((sub, bkg.rms()))
    run = lambda job: isep.extract(job[0], 1.5, err=job[1], filter_kernel=None, segmentation_map=True)  # noqa: E731
    sequential = [run(job) for job in jobs]
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=2) as pool:
            parallel = list(pool.map(run, jobs))
        for (objects, segmap), (expected, expected_map) in zip(parallel, sequential):
            assert np.array_equal(segmap, expected_map)
            assert objects.tobytes() == expected.tobytes()
