#!/usr/bin/env python3
"""Times imflow.sep against SEP 1.4.1 on the same arrays: Background then extract (SEP's defaults:
its 3x3 filter, deblending, CLEAN) of a synthetic 4096 x 4096 float32 star field; best of N runs
each, in one process, alternating. Run it on one core (taskset -c 0) for the single-thread
comparison. Writes JSON (-o) with both timings and the object counts."""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sep_deblend import crowded  # noqa: E402


def run(module, data, err_kind):
    t0 = time.perf_counter()
    bkg = module.Background(data)
    t1 = time.perf_counter()
    sub = data - bkg
    err = bkg.globalrms if err_kind == "global" else bkg.rms()
    t2 = time.perf_counter()
    objects = module.extract(sub, 1.5, err=err)
    t3 = time.perf_counter()
    return {"background_s": t1 - t0, "extract_s": t3 - t2, "total_s": (t1 - t0) + (t3 - t2)}, len(objects)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--err", choices=["global", "map"], nargs="+", default=["global", "map"],
                        help="extract's err: the background's globalrms (conv filter), its RMS map (matched filter)")
    parser.add_argument("-o", "--output", help="JSON file to write")
    args = parser.parse_args()
    import sep
    import imflow.sep as isep
    sep.set_extract_pixstack(10**7)
    sep.set_sub_object_limit(10**4)
    data = crowded(np, args.size, 7)
    result = {
        "benchmark": "Background + extract, SEP's defaults (3x3 filter, deblending, CLEAN), thresh 1.5",
        "image": f"{args.size}x{args.size} float32, tools/compare_sep_deblend.py crowded(seed 7)",
        "repeat": args.repeat, "best_of": "total_s", "cpus_allowed": len(os.sched_getaffinity(0)),
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "sep_version": sep.__version__, "runs": {},
    }
    for err in args.err:
        best = {"sep": None, "imflow": None}
        counts = {}
        for _ in range(args.repeat):
            for name, module in (("sep", sep), ("imflow", isep)):
                times, n = run(module, data, err)
                counts[name] = n
                if best[name] is None or times["total_s"] < best[name]["total_s"]:
                    best[name] = times
        result["runs"][err] = {"err": "bkg.globalrms" if err == "global" else "bkg.rms()", **best, "objects": counts,
                               "speedup_total": best["sep"]["total_s"] / best["imflow"]["total_s"]}
    print(json.dumps(result, indent=2))
    if args.output:
        with open(args.output, "w") as stream:
            json.dump(result, stream, indent=2)
            stream.write("\n")


if __name__ == "__main__":
    main()
