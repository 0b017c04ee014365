# imflow.sep.extract with SEP's filters against sep.extract (SEP 1.4.1): the default kernel as a
# matched filter (err or var maps) and as a convolution, other kernels (even sizes, asymmetric),
# masks, and a given segmentation map: the same objects in the same order, SEP's columns.
import numpy as np
import pytest
import sep

import imflow.sep as isep
from test_extract import compare, subtracted

NAMES = ["isaac_crop", "dss_crop", "crowded_400"]
ASYMMETRIC = np.array([[0.0, 1.0, 2.0, 1.0], [1.0, 3.0, 5.0, 2.0], [0.5, 2.0, 1.0, -0.25]], dtype=np.float32)
CASES = {  # name: (keyword arguments of both extracts, given the image's background)
    "matched_rms": lambda bkg: {"err": bkg.rms()},
    "conv_rms": lambda bkg: {"err": bkg.rms(), "filter_type": "conv"},
    "global": lambda bkg: {"err": bkg.globalrms},
    "matched_var_gain": lambda bkg: {"var": bkg.rms() ** 2, "gain": 2.5},
    "asymmetric_matched": lambda bkg: {"err": bkg.rms(), "filter_kernel": ASYMMETRIC, "clean": False},
    "asymmetric_conv": lambda bkg: {"err": bkg.globalrms, "filter_kernel": ASYMMETRIC},
}


def check(ours, theirs):
    worst = compare(ours, theirs)
    assert worst["x"] <= 1e-4 and worst["y"] <= 1e-4
    for field in ("flux", "cflux", "thresh", "peak", "cpeak", "x2", "y2", "a", "b", "cxx", "cyy"):
        assert worst[field] <= 1e-5, field
    for field in ("errx2", "erry2"):
        assert np.allclose(ours[0][field], theirs[0][field], rtol=1e-5, atol=0), field
    return worst


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_filtered_extract_equals_seps(images, name, case):
    sub, bkg = subtracted(images, name)
    kwargs = CASES[case](bkg)
    ours = isep.extract(sub, 1.5, segmentation_map=True, **kwargs)
    theirs = sep.extract(sub, 1.5, segmentation_map=True, **kwargs)
    worst = check(ours, theirs)
    # the filter changes the detection: cpeak is not peak
    assert not np.array_equal(ours[0]["cpeak"], ours[0]["peak"])
    print(f"{name} {case}: {len(ours[0])} objects ({int(np.sum(ours[0]['flag'] & 1))} blended), worst {worst}")
    assert len(ours[0]) >= 10


@pytest.mark.parametrize("filter_type", ["matched", "conv"])
def test_filtered_extract_with_mask(images, filter_type):
    sub, bkg = subtracted(images, "crowded_400")
    mask = np.zeros(sub.shape, bool)
    mask[100:180, 50:300] = True
    mask[::7, ::5] = True  # isolated masked pixels inside objects: SEP filters them as zeros
    for kwargs in ({"err": bkg.rms()}, {"err": bkg.globalrms}):
        ours = isep.extract(sub, 1.5, mask=mask, filter_type=filter_type, segmentation_map=True, **kwargs)
        theirs = sep.extract(sub, 1.5, mask=mask, filter_type=filter_type, segmentation_map=True, **kwargs)
        compare(ours, theirs)
        assert len(ours[0]) >= 10


@pytest.mark.parametrize("name", NAMES)
def test_given_segmentation_map(images, name):
    sub, bkg = subtracted(images, name)
    _, segmap = sep.extract(sub, 1.5, err=bkg.rms(), segmentation_map=True)
    segmap = np.where(segmap % 5 == 0, 0, segmap * 3)  # ids with gaps, some objects left out
    for kwargs in ({"err": bkg.rms()}, {"err": bkg.globalrms, "filter_kernel": None}):
        ours = isep.extract(sub, 1.5, segmentation_map=segmap, **kwargs)
        theirs = sep.extract(sub, 1.5, segmentation_map=segmap, **kwargs)
        assert np.array_equal(ours[0]["flag"], theirs[0]["flag"])
        check(ours, theirs)
        assert len(ours[0]) == len(np.unique(segmap)) - 1
