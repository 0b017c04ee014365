# How imflow.run ends: Ctrl-C returns once the engine has finished and written summary.json; failed
# items give a RuntimeWarning, a fail_fast stop imflow.InputError; a pipeline file that does not exist
# is named as missing; read_catalog of a catalog without sources keeps the column types; the
# engine logs on stderr.
import json
import os
import shutil
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import imflow
from conftest import ROOT, write_fits_primary

ISAAC = os.path.join(ROOT, "datasets", "samples", "isaac_crop.fits")
STEPS = [{"background": {"method": "mesh", "size": 64, "filter_size": 3}},
         {"segment": {"nsigma": 1.5, "relative_to": "background", "compare": "float32"}},
         {"label": {"connectivity": 8}},
         {"deblend": {"nthresh": 32, "mincont": 0.005, "clean": True, "clean_param": 1.0, "minarea": 5}},
         "measure"]


def pipeline(directory):
    return {"input": {"dir": os.fspath(directory), "patterns": ["*.fits"]},
            "output": {"dir": "unused", "formats": ["csv"]}, "device": "cpu", "steps": STEPS}


def inputs(tmp_path, good, bad=0):
    """A directory of `good` copies of isaac_crop.fits (symbolic links) and `bad` unreadable files."""
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(good):
        (directory / f"good{i:03d}.fits").symlink_to(ISAAC)
    for i in range(bad):
        (directory / f"bad{i}.fits").write_text("not a FITS file")
    return directory


def waiting_in_run(frame):
    """Whether a thread's frame is threading's code (a wait) called by imflow.run itself."""
    if frame is None or frame.f_code.co_filename != threading.__file__:
        return False
    while frame.f_code.co_filename == threading.__file__:
        frame = frame.f_back
    return frame.f_code.co_name == "run" and frame.f_code.co_filename == imflow.__file__


def test_keyboard_interrupt_is_raised_once_the_run_has_ended(tmp_path):
    main = threading.get_ident()

    def press_ctrl_c():  # a real SIGINT, once the main thread waits for the run in imflow.run
        while not waiting_in_run(sys._current_frames().get(main)):
            time.sleep(0.001)  # polls the condition above
        signal.pthread_kill(main, signal.SIGINT)

    class InterruptingBar:
        """Made once the files are listed: the run is under way."""
        def __init__(self, total, unit, desc):
            self.n = 0
            threading.Thread(target=press_ctrl_c).start()

        def update(self, n):
            self.n += n

        def set_postfix(self, refresh=True, **values):
            pass

        def close(self):
            pass

    directory = inputs(tmp_path, 200)
    with pytest.raises(KeyboardInterrupt):
        imflow.run(pipeline(directory), output=tmp_path / "out", threads=1, progress=InterruptingBar)
    # Already there when run() raised: the engine has stopped and written its summary.
    assert not [t for t in threading.enumerate() if t.name == "imflow.run"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "interrupted" in summary["totals"]["stopped_early"]
    assert 0 < summary["totals"]["items"] < 200


def test_failed_items_give_one_runtime_warning(tmp_path):
    directory = inputs(tmp_path, 1, bad=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = imflow.run(pipeline(directory), output=tmp_path / "out", threads=2, progress=False)
    assert summary["totals"]["failed"] == 4 and summary["totals"]["succeeded"] == 1
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    message = str(warning.message)
    assert "4 of 5 items failed" in message and "and 1 more" in message
    assert message.count("not a readable FITS file") == 3 and str(directory / "bad") in message
    assert warning.filename == __file__  # reported at the caller's line


def test_fail_fast_stop_raises_input_error_with_the_summary(tmp_path):
    directory = inputs(tmp_path, 1, bad=1)
    with pytest.raises(imflow.InputError, match="fail_fast.*bad0.fits: not a readable FITS file") as raised:
        imflow.run(pipeline(directory), output=tmp_path / "out", threads=1, fail_fast=True, progress=False)
    summary = raised.value.summary
    assert summary["fail_fast"]["stopped_after"] == str(directory / "bad0.fits")
    assert summary["totals"]["failed"] == 1
    assert (tmp_path / "out" / "summary.json").exists()


def test_true_false_options_take_only_booleans(tmp_path):
    for option in ("fail_fast", "resume"):
        with pytest.raises(TypeError, match=f"{option} must be True or False, not 'no'"):
            imflow.run(pipeline(tmp_path), output=tmp_path / "out", **{option: "no"})


def test_count_options_are_checked_as_the_command_line_checks_them(tmp_path):
    for option, value, error in (("threads", -1, ValueError), ("buffers", 5000, ValueError),
                                 ("threads", 2.7, TypeError), ("batch", True, TypeError)):
        with pytest.raises(error, match=f"run: {option} must be a whole number from 0 to 4096"):
            imflow.run(pipeline(tmp_path), output=tmp_path / "out", **{option: value})
    assert not (tmp_path / "out").exists()  # refused before the run
    data = np.random.default_rng(2).normal(100.0, 5.0, (32, 32)).astype(np.float32)
    with pytest.raises(ValueError, match="extract_image: threads must be a whole number"):
        imflow.extract_image(data, {"steps": ["background", "segment", "label", "measure"]}, threads=-5)


def test_a_missing_pipeline_file_is_named(tmp_path):
    data = np.random.default_rng(1).normal(100.0, 5.0, (64, 64)).astype(np.float32)
    for name in ("astro-photometry.yml", os.path.join("config", "astro-photometry"), str(tmp_path / "p.yaml")):
        with pytest.raises(FileNotFoundError, match="pipeline: no such file") as raised:
            imflow.run(name, input=tmp_path, output=tmp_path / "out")
        assert raised.value.filename == name
        with pytest.raises(FileNotFoundError, match="pipeline: no such file"):
            imflow.extract_image(data, name)
    # One-line YAML text stays YAML text.
    catalog = imflow.extract_image(data, json.dumps({"steps": ["background", "segment", "label", "measure"]}))
    assert "flux_iso" in (catalog.colnames if hasattr(catalog, "colnames") else catalog.dtype.names)
    with pytest.raises(imflow.ConfigError, match="YAML map"):
        imflow.extract_image(data, "measure")


def test_read_catalog_without_sources_keeps_the_column_types(tmp_path):
    directory = inputs(tmp_path, 1)
    write_fits_primary(directory / "flat.fits", np.full((64, 64), 5, np.float32))  # no source
    summary = imflow.run(pipeline(directory), output=tmp_path / "out", threads=2, progress=False)
    empty, full = (imflow.read_catalog(next(o for o in r["outputs"] if o.endswith(".cat.csv")))
                   for r in sorted(summary["items"], key=lambda r: r["nsources"]))
    assert len(empty) == 0 and len(full) > 10
    names = full.dtype.names  # an astropy Table's and a NumPy structured array's
    assert empty.dtype.names == names and [empty[n].dtype for n in names] == [full[n].dtype for n in names]
    assert empty["id"].dtype == np.int64 and empty["x"].dtype == np.float64
    merged = imflow.read_catalog(tmp_path / "out" / "catalog.csv")
    assert merged["file"].dtype.kind == "U" and merged["hdu"].dtype == np.int64
    shutil.copy(tmp_path / "out" / "catalog.csv", tmp_path / "header_only.csv")
    with open(tmp_path / "header_only.csv", "r+") as stream:
        stream.truncate(len(stream.readline()))
    header_only = imflow.read_catalog(tmp_path / "header_only.csv")
    assert [header_only[name].dtype.kind for name in header_only.dtype.names] == \
        [merged[name].dtype.kind for name in merged.dtype.names]
    table = pytest.importorskip("astropy.table", reason="read_catalog gives astropy Tables with astropy installed")
    assert len(table.vstack([empty, full])) == len(full)


def test_module_namespace_holds_no_imported_modules():
    assert not {"errno", "json", "os", "pkgutil", "threading", "warnings"} & set(dir(imflow))


def test_the_engine_logs_on_stderr_warnings_and_errors_by_default(tmp_path, capfd):
    directory = inputs(tmp_path, 1, bad=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        imflow.run(pipeline(directory), output=tmp_path / "quiet", threads=1, progress=False)
        quiet = capfd.readouterr()
        imflow.set_log_level("info")
        try:
            imflow.run(pipeline(directory), output=tmp_path / "told", threads=1, progress=False)
        finally:
            imflow.set_log_level("warning")
        told = capfd.readouterr()
    assert quiet.out == "" and told.out == ""  # the script's stdout stays its own
    assert "imflow error: " in quiet.err and "bad0.fits: not a readable FITS file" in quiet.err
    assert "imflow info: " not in quiet.err
    assert "imflow info: " in told.err and "2 files from" in told.err
    with pytest.raises(ValueError, match="'loud' is not one of"):
        imflow.set_log_level("loud")
