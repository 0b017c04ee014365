#!/usr/bin/env python3
"""Times imflow.sep against SEP 1.4.1 on the same arrays: Background then extract (deblending,
CLEAN; SEP's 3x3 filter or none) of a synthetic 4096 x 4096 float32 star field; best of N runs
each, in one process, alternating. --device cuda times imflow.sep on the GPU (per call, array
transfers included). total_s = Background + extract; workflow_s adds `data - bkg` and fetching
err (the GPU keeps the maps until asked for them). Where SEP is not installed
(a GPU host), --sep-json takes SEP's timings from an earlier JSON of this script, or imflow's
time is reported alone. Run it on one core (taskset -c 0) for the single-thread comparison.
Writes JSON (-o) with the timings and the object counts."""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sep_deblend import crowded  # noqa: E402

DEFAULT_KERNEL = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]], dtype=np.float32)


def run(module, data, err_kind, kernel, device=None):
    on = {} if device is None else {"device": device}
    t0 = time.perf_counter()
    bkg = module.Background(data, **on)
    t1 = time.perf_counter()
    sub = data - bkg
    err = bkg.globalrms if err_kind == "global" else bkg.rms()
    t2 = time.perf_counter()
    objects = module.extract(sub, 1.5, err=err, filter_kernel=kernel, **on)
    t3 = time.perf_counter()
    return {"background_s": t1 - t0, "extract_s": t3 - t2, "total_s": (t1 - t0) + (t3 - t2),
            "subtract_and_err_s": t2 - t1, "workflow_s": t3 - t0}, len(objects)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--err", choices=["global", "map"], nargs="+", default=["global", "map"],
                        help="extract's err: the background's globalrms (conv filter), its RMS map (matched filter)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="imflow.sep's device")
    parser.add_argument("--filter", choices=["default", "none"], nargs="+", default=["default"],
                        help="filter_kernel: SEP's default_kernel (the default) or None; several: one JSON "
                             "with a result per filter under 'results'")
    parser.add_argument("--sep-json", help="SEP's timings from an earlier -o of this script (same size, filter)")
    parser.add_argument("--no-sep", action="store_true", help="time imflow only")
    parser.add_argument("-o", "--output", help="JSON file to write")
    args = parser.parse_args()
    if args.sep_json and len(args.filter) > 1:
        parser.error("--sep-json takes SEP's timings of one filter")
    results = [measure(args, name) for name in args.filter]
    output = results[0] if len(results) == 1 else {"results": results}
    print(json.dumps(output, indent=2))
    if args.output:
        with open(args.output, "w") as stream:
            json.dump(output, stream, indent=2)
            stream.write("\n")


def measure(args, filter_name):
    """SEP and imflow.sep timed on the field with one filter: the JSON record of this script."""
    kernel = DEFAULT_KERNEL if filter_name == "default" else None
    import imflow.sep as isep
    sep = None
    if not args.no_sep and not args.sep_json:
        try:
            import sep
        except ImportError:
            print("sep is not installed: timing imflow only (--sep-json takes SEP's timings from a JSON)",
                  file=sys.stderr)
    earlier = None
    if args.sep_json:
        with open(args.sep_json) as stream:
            earlier = json.load(stream)
        if earlier.get("filter", "default") != filter_name or earlier.get("size", args.size) != args.size:
            sys.exit(f"{args.sep_json}: SEP was timed with another filter or size")
    if sep is not None:
        sep.set_extract_pixstack(10**7)
        sep.set_sub_object_limit(10**4)
    data = crowded(np, args.size, 7)
    result = {
        "benchmark": f"Background + extract (filter {filter_name}, deblending, CLEAN), thresh 1.5",
        "image": f"{args.size}x{args.size} float32, tools/compare_sep_deblend.py crowded(seed 7)",
        "size": args.size, "filter": filter_name, "device": args.device,
        "repeat": args.repeat, "best_of": "total_s", "cpus_allowed": len(os.sched_getaffinity(0)),
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "sep_version": sep.__version__ if sep is not None else (earlier or {}).get("sep_version"), "runs": {},
    }
    if args.device == "cuda":  # the first call creates this thread's device session: timed apart
        t0 = time.perf_counter()
        run(isep, data, "global", kernel, "cuda")
        result["cuda_first_call_s"] = time.perf_counter() - t0
    for err in args.err:
        best = {"sep": None, "imflow": None}
        counts = {}
        for _ in range(args.repeat):
            for name, module in (("sep", sep), ("imflow", isep)):
                if module is None:
                    continue
                times, n = run(module, data, err, kernel, args.device if name == "imflow" else None)
                counts[name] = n
                if best[name] is None or times["total_s"] < best[name]["total_s"]:
                    best[name] = times
        if sep is None and earlier is not None and err in earlier["runs"]:
            best["sep"] = earlier["runs"][err]["sep"]
            counts["sep"] = earlier["runs"][err]["objects"].get("sep")
        run_result = {"err": "bkg.globalrms" if err == "global" else "bkg.rms()", **best, "objects": counts}
        if best["sep"] is not None:
            run_result["speedup_total"] = best["sep"]["total_s"] / best["imflow"]["total_s"]
            if "workflow_s" in best["sep"]:
                run_result["speedup_workflow"] = best["sep"]["workflow_s"] / best["imflow"]["workflow_s"]
        result["runs"][err] = run_result
    return result


if __name__ == "__main__":
    main()
