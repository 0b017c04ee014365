#!/usr/bin/env python3
"""Where the time of a run went, from its --trace: each stage and each of its parts (the parts a
trace nests under a stage: `fits pixels` in `read`, `catalog csv` in `write`, ...), summed over
the run, per item, and the thread CPU time within them ("cpu_us": how much of the wall time the
thread worked rather than waited). GPU stages (h2d, kernels, d2h) have no CPU time.

usage: tools/trace_parts.py TRACE.json[.gz] [--items N] [--json OUT.json [--key KEY]] [--label NAME]
  --items N   divide by N items (default: the number of `write` events, else 1)
prints one line per event name, largest total first; --json appends the same figures to the
"runs" of OUT.json (of its KEY with --key; the file's other keys are kept)."""
import argparse
import collections
import gzip
import json
import math
import pathlib


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def summarize(events, items=None):
    spans = [e for e in events if e.get("ph") == "X"]
    wall = collections.defaultdict(float)
    cpu = collections.defaultdict(float)
    count = collections.Counter()
    for e in spans:
        name = e["name"]
        wall[name] += e["dur"]
        count[name] += 1
        cpu_us = e.get("args", {}).get("cpu_us")
        cpu[name] = cpu[name] + cpu_us if cpu_us is not None and not math.isnan(cpu[name]) else math.nan
    items = items or count.get("write") or 1
    start = min(e["ts"] for e in spans) if spans else 0.0
    end = max(e["ts"] + e["dur"] for e in spans) if spans else 0.0
    rows = []
    for name in sorted(wall, key=lambda n: -wall[n]):
        rows.append({
            "name": name,
            "events": count[name],
            "total_ms": round(wall[name] / 1e3, 3),
            "per_item_ms": round(wall[name] / 1e3 / items, 4),
            "cpu_per_item_ms": None if math.isnan(cpu[name]) else round(cpu[name] / 1e3 / items, 4),
        })
    return {"items": items, "span_s": round((end - start) / 1e6, 4), "parts": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", type=pathlib.Path)
    parser.add_argument("--items", type=int)
    parser.add_argument("--json", type=pathlib.Path)
    parser.add_argument("--key")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    summary = summarize(load(args.trace), args.items)
    print(f"{args.label or args.trace.name}: {summary['items']} items, trace span {summary['span_s']:.3f} s")
    for row in summary["parts"]:
        cpu = "" if row["cpu_per_item_ms"] is None else f"  cpu {row['cpu_per_item_ms']:9.4f} ms"
        print(f"  {row['name']:<18} {row['events']:7d} events  {row['total_ms']:10.1f} ms in all"
              f"  {row['per_item_ms']:9.4f} ms per item{cpu}")
    if args.json:
        document = json.loads(args.json.read_text()) if args.json.exists() else {}
        target = document.setdefault(args.key, {}) if args.key else document
        target.setdefault("runs", []).append({"label": args.label or args.trace.name, **summary})
        args.json.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
