"""imflow: streaming batch processing of scientific images, from Python.

    imflow.run(pipeline, input=None, output=None, **options)  # a pipeline over a directory
    imflow.extract_image(array, pipeline)                     # a pipeline over a 2-d array: its catalog
    imflow.read_catalog(path)                                 # a CSV or FITS catalog it wrote
    import imflow.sep as sep                                  # SEP's Background and extract
    imflow.set_device("cuda")                                 # imflow.sep's default device ("cpu")
"""
import errno as _errno
import json as _json
import numbers as _numbers
import os as _os
import pkgutil as _pkgutil
import threading as _threading
import warnings as _warnings

# In a build tree the extension module is built into build/python/imflow, next to nothing else:
# with PYTHONPATH=build/python:python both directories make up the package.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _imflow  # noqa: E402
from ._imflow import ConfigError, InputError, OutputError  # noqa: E402

__version__ = _imflow.__version__
__all__ = ["run", "extract_image", "read_catalog", "set_device", "get_device", "cuda_available", "set_log_level",
           "ConfigError", "InputError", "OutputError", "__version__"]

_DEVICES = ("cpu", "cuda")
_settings = {"device": "cpu"}  # imflow.sep's default device: a setting read at each call, no device state


def set_log_level(level):
    """The engine's log level: "debug", "info", "warning" (the default: warnings and errors only),
    "error" or "off". The log goes to the process's stderr, as the command line's."""
    _imflow.set_log_level(str(level))


def set_device(device):
    """The device imflow.sep.Background and imflow.sep.extract use when not given one: "cpu" or "cuda"."""
    _settings["device"] = _device_name(device)


def get_device():
    """The device imflow.sep uses when not given one (set_device; "cpu" by default)."""
    return _settings["device"]


def cuda_available():
    """Whether this module was built with CUDA and sees a CUDA device."""
    built, count = _imflow.cuda_status()
    return bool(built) and count > 0


def _device_name(device):
    """"cpu" or "cuda" (None: the set_device default); ValueError otherwise."""
    if device is None:
        return _settings["device"]
    if device not in _DEVICES:
        raise ValueError(f"device: {device!r} is not one of 'cpu', 'cuda'")
    return device

def _flag(name):
    """The check of a True/False option: a str such as "no" is refused, not taken as True."""
    def check(value):
        if isinstance(value, bool) or (getattr(value, "dtype", None) == bool and getattr(value, "shape", None) == ()):
            return bool(value)
        raise TypeError(f"run: {name} must be True or False, not {value!r}")
    return check


def _whole_number(name, high=4096):
    """The check of a count option, as the command line checks it: a whole number from 0 to `high`."""
    def check(value):
        if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
            raise TypeError(f"{name} must be a whole number from 0 to {high}, not {value!r}")
        if not 0 <= value <= high:
            raise ValueError(f"{name} must be a whole number from 0 to {high}, not {value}")
        return int(value)
    return check


_RUN_OPTIONS = {"device": str, "threads": _whole_number("run: threads"), "buffers": _whole_number("run: buffers"),
                "batch": _whole_number("run: batch"), "fail_fast": _flag("fail_fast"),
                "resume": _flag("resume"), "trace": _os.fspath, "summary": _os.fspath}


def _names_a_file(text):
    """Whether a one-line string is meant as a file name, not YAML text: it ends with .yml or .yaml,
    or holds a path separator, and has no "key: value" or flow collection that would make it YAML."""
    if "\n" in text or ": " in text or text.lstrip().startswith(("{", "[")):
        return False
    separators = {"/", _os.sep} | ({_os.altsep} if _os.altsep else set())
    return text.lower().endswith((".yml", ".yaml")) or any(sep in text for sep in separators)


def _pipeline_text(pipeline):
    """(YAML text, name for messages) of a pipeline file, YAML text, or a dict."""
    if isinstance(pipeline, dict):
        return _json.dumps(pipeline), "<dict>"  # JSON is YAML
    if isinstance(pipeline, _os.PathLike) or (isinstance(pipeline, str) and "\n" not in pipeline
                                               and (_os.path.isfile(pipeline) or _names_a_file(pipeline))):
        path = _os.fspath(pipeline)
        try:
            with open(path, encoding="utf-8") as stream:
                return stream.read(), path
        except FileNotFoundError:
            raise FileNotFoundError(_errno.ENOENT, "pipeline: no such file (a one-line string that ends with "
                                    ".yml/.yaml or holds a path separator names a file)", path) from None
    if isinstance(pipeline, str):
        return pipeline, "<string>"
    raise TypeError("pipeline: a YAML file path, YAML text or a dict")


def run(pipeline, input=None, output=None, progress=None, **options):
    """Run a pipeline (a YAML file, YAML text or a dict) over a directory; the run summary as a dict.

    input and output override the pipeline's input.dir and output.dir; options are imflow run's
    command-line options: device ('auto', 'cpu', 'cuda'), threads, buffers, batch, fail_fast,
    resume (True or False), trace (a Chrome trace file) and summary (where summary.json goes).
    progress: None (a tqdm bar of the files done when tqdm is installed: tqdm.auto, a widget in a
    notebook), True (the same, ImportError without tqdm), False (none), or a tqdm-like class.
    Items that failed: one RuntimeWarning naming how many and the first of them with their reasons
    (each item's "status" and "error" are in the summary). A run that fail_fast stopped raises
    imflow.InputError, with the summary as its .summary.
    KeyboardInterrupt stops the run after the items in flight (their outputs and the summary are
    written) and is raised again once the run has ended; a second KeyboardInterrupt while waiting
    for that raises at once, the run still finishing in its thread.
    """
    text, name = _pipeline_text(pipeline)
    settings = _imflow.RunSettings()
    if input is not None:
        settings.input = _os.fspath(input)
    if output is not None:
        settings.output = _os.fspath(output)
    for key, value in options.items():
        if key not in _RUN_OPTIONS:
            raise TypeError(f"run: unknown option {key!r} (known: progress, {', '.join(sorted(_RUN_OPTIONS))})")
        setattr(settings, key, _RUN_OPTIONS[key](value))
    bar = _progress_bar(progress)
    counts = _imflow.RunCounts()
    outcome = {}
    finished = _threading.Event()

    def work():
        try:
            outcome["summary"] = _imflow.run(text, name, settings, counts)
        except BaseException as error:  # noqa: B036  (raised again in the calling thread)
            outcome["error"] = error
        finally:
            finished.set()

    # The run goes on in a thread (without the GIL) so that this one can draw the bar and take
    # KeyboardInterrupt, which asks the run to stop. The event, not Thread.join, tells when it has
    # ended: a join that KeyboardInterrupt interrupts marks the thread stopped (CPython 3.11, 3.12)
    # while it still runs. Waits with a timeout let the interrupt in.
    worker = _threading.Thread(target=work, name="imflow.run", daemon=True)
    worker.start()
    shown = None
    try:
        while not finished.wait(0.1):
            if bar is not None:
                shown = _show_progress(bar, shown, counts)
        if bar is not None:
            shown = _show_progress(bar, shown, counts)
    except KeyboardInterrupt:
        counts.stop()
        while not finished.wait(0.1):  # the items in flight, the catalogs and summary.json
            pass
        worker.join()
        raise
    finally:
        if shown is not None:
            _show_progress(bar, shown, counts)
            shown.close()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    summary = _json.loads(outcome["summary"])
    _report_failures(summary)
    return summary


def _failure_text(record):
    """'file: reason' of a failed item's summary record (its error names the file already)."""
    error = str(record.get("error", "failed"))
    file = str(record.get("file", ""))
    return error if not file or error.startswith(file) else f"{file}: {error}"


def _report_failures(summary):
    """What `imflow run` tells by its exit code 2: InputError (its .summary: the summary) when
    fail_fast stopped the run, else one RuntimeWarning when items failed."""
    failed = [record for record in summary.get("items", []) if record.get("status") == "failed"]
    if "fail_fast" in summary:
        stopped_after = summary["fail_fast"].get("stopped_after", "")
        reason = next((_failure_text(r) for r in failed if r.get("file") == stopped_after),
                      _failure_text(failed[0]) if failed else stopped_after)
        error = InputError(f"fail_fast: the run stopped after a failed item, the inputs after it were not "
                           f"processed: {reason} (the run summary is this exception's .summary)")
        error.summary = summary
        raise error
    if failed:
        shown = 3
        listed = "; ".join(_failure_text(record) for record in failed[:shown])
        more = f"; and {len(failed) - shown} more" if len(failed) > shown else ""
        items = summary.get("totals", {}).get("items", len(summary.get("items", [])))
        _warnings.warn(f"imflow.run: {len(failed)} of {items} items failed: {listed}{more} (the summary's items "
                       f"have 'status': 'failed' and the 'error')", RuntimeWarning, stacklevel=3)


def _progress_bar(progress):
    """The tqdm-like class run draws its bar with, or None."""
    if progress is False:
        return None
    if progress is None or progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if progress:
                raise ImportError("run(progress=True) needs tqdm (pip install tqdm)") from None
            return None
        return tqdm
    return progress


def _show_progress(bar, shown, counts):
    """The bar (made once the files are listed) brought up to the run's counts."""
    if counts.files < 0:
        return shown
    if shown is None:
        shown = bar(total=counts.files, unit="file", desc="imflow")
    if counts.files_done > shown.n:
        shown.update(counts.files_done - shown.n)
    shown.set_postfix(images=counts.items_done, failed=counts.items_failed, refresh=False)
    return shown


def extract_image(data, pipeline, threads=None, device="cpu"):
    """Run a pipeline (a YAML file, YAML text or a dict) on one 2-d array and return its catalog:
    an astropy Table with the columns, units and header values of the FITS catalog ``imflow run``
    writes for the same image in a FITS file (a NumPy structured array without astropy).

    data: any numeric 2-d array, any byte order (converted to float32 as a FITS image is read);
    the masked pixels of a masked array and NaNs are invalid pixels. The steps run on the CPU
    (device="cpu" only), threads of them at once (None: all cores), the image whole (no tiling),
    without the GIL. The pipeline's input, output and engine sections are not used; measure's
    gain_keyword and zeropoint_keyword fall back to its gain and zeropoint (an array has no header).
    """
    if device == "cuda":
        raise NotImplementedError("device: 'cuda': extract_image runs on the CPU only (device='cpu')")
    if device != "cpu":
        raise ValueError(f"device: {device!r} is not 'cpu' (extract_image runs on the CPU only)")
    threads = 0 if threads is None else _whole_number("extract_image: threads")(threads)
    import numpy as np
    text, name = _pipeline_text(pipeline)
    array = np.ma.filled(np.ma.asanyarray(data).astype(np.float32), np.nan) if np.ma.isMaskedArray(data) else data
    from ._apertures import _image
    result = _imflow.extract_image(text, name, _image(array), threads)
    for warning in result["warnings"]:
        _warnings.warn(f"extract_image: {warning}", RuntimeWarning, stacklevel=2)
    meta = {key: _card_value(value, numeric) for key, value, numeric, _ in result["cards"]}
    try:
        from astropy import units
        from astropy.table import Column, Table
    except ImportError:
        dtype = [(n, c.dtype) for n, c in zip(result["names"], result["columns"])]
        rows = np.empty(len(result["columns"][0]), dtype=dtype)
        for n, c in zip(result["names"], result["columns"]):
            rows[n] = c
        return rows
    columns = [Column(values, name=n, description=d or None,
                      unit=units.Unit(u, format="fits", parse_strict="silent") if u else None)
               for n, u, d, values in zip(result["names"], result["units"], result["descriptions"], result["columns"])]
    return Table(columns, meta=meta)


def _card_value(text, numeric):
    """A header value as astropy reads it from a FITS card: int, float, or the text."""
    if not numeric:
        return text
    try:
        return int(text)
    except ValueError:
        return float(f"{float(text):.15G}")  # the 15 digits CFITSIO writes into the FITS catalog's card


def read_catalog(path):
    """A catalog imflow wrote (CSV or FITS): an astropy Table when astropy is installed, else a
    NumPy structured array (FITS catalogs need astropy)."""
    path = _os.fspath(path)
    try:
        from astropy.table import Table
    except ImportError:
        Table = None
    if path.lower().endswith((".fits", ".fit", ".fts", ".ldac")):
        if Table is None:
            raise ImportError(f"{path}: reading a FITS catalog needs astropy (pip install astropy)")
        return _described(Table.read(path, hdu=_catalog_hdu(path)), path)
    import numpy as np
    with open(path, encoding="utf-8") as stream:
        header = stream.readline().strip().split(",")
        rows_follow = any(line.strip() for line in stream)
    if header == [""]:
        raise ValueError(f"{path}: empty catalog file (no header row)")
    if rows_follow:
        # deletechars="": column names as written (flux_aper_7.5 keeps its '.'); the names set again
        # after, as genfromtxt renames some (the merged catalog's file as file_).
        rows = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8", ndmin=1, deletechars="")
        if len(rows.dtype.names) == len(header):
            rows.dtype.names = tuple(name.strip() for name in header)
    else:  # a catalog without sources: the columns' types, not the bool genfromtxt gives empty columns
        rows = np.empty(0, dtype=[(name.strip(), _empty_column_dtype(name.strip())) for name in header])
    return Table(rows) if Table is not None else rows


# The CSV catalogs' integer columns (those imflow writes without a '.0'); the merged catalog's `file`
# is text. Every other column is float64.
_INTEGER_COLUMNS = frozenset({"id", "npix", "peak_x", "peak_y", "xmin", "xmax", "ymin", "ymax", "flags",
                              "imaflags_iso", "nimaflags_iso", "flags_auto", "flags_win", "flags_phot",
                              "hdu", "plane"})


def _empty_column_dtype(name):
    """The dtype genfromtxt gives column `name` of a catalog with rows."""
    if name == "file":
        return "<U1"
    return "int64" if name in _INTEGER_COLUMNS else "float64"


def _described(table, path):
    """The table with each column's description from its TTYPEn comment, as extract_image gives it
    (not CFITSIO's default "label for field N" of a column written without one)."""
    from astropy.io import fits
    header = fits.getheader(path, ext=_catalog_hdu(path))
    for index, name in enumerate(table.colnames, start=1):
        comment = header.comments[f"TTYPE{index}"] if f"TTYPE{index}" in header else ""
        if comment and not comment.startswith("label for field") and header.get(f"TTYPE{index}") == name:
            table[name].description = comment
    return table


def _catalog_hdu(path):
    """The first binary table HDU of a FITS catalog (FITS_LDAC: the OBJECTS table, LDAC_OBJECTS)."""
    from astropy.io import fits
    with fits.open(path) as hdus:
        names = [hdu.name for hdu in hdus]
        if "LDAC_OBJECTS" in names:
            return names.index("LDAC_OBJECTS")
        for index, hdu in enumerate(hdus):
            if isinstance(hdu, fits.BinTableHDU):
                return index
    raise ValueError(f"{path}: no binary table in this FITS file")
