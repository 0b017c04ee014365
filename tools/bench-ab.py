#!/usr/bin/env python3
"""The A/B summary of tools/bench-ab.sh: SIDE=bench.json arguments (side a or b, one per round and
build, in the order they ran) into one JSON with every run's figures, the medians per side and the
ratios b / a. Standard library only.
usage: bench-ab.py [--label-a NAME] [--label-b NAME] --out OUT.json a=RUN1.json b=RUN1.json a=... b=..."""
import argparse
import json
import statistics


def figures(path):
    bench = json.load(open(path))
    point = bench["points"][0]
    items = point["items"]
    record = {"images_per_second": point["images_per_second"]["median"],
              "stage_ms_per_item": {k: round(1e3 * v / items, 4) for k, v in sorted(point["stage_busy_seconds"].items())}}
    if "end_to_end_images_per_second" in point:
        record["end_to_end_images_per_second"] = point["end_to_end_images_per_second"]["median"]
    return bench, record


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--label-a", default="a")
    parser.add_argument("--label-b", default="b")
    parser.add_argument("--out", required=True)
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    sides = {"a": [], "b": []}
    command = machine = None
    for run in args.runs:
        side, path = run.split("=", 1)
        bench, record = figures(path)
        sides[side].append(record)
        command, machine = bench.get("command"), bench.get("machine")
    medians = {}
    for side, records in sides.items():
        keys = [k for k in ("images_per_second", "end_to_end_images_per_second") if all(k in r for r in records)]
        stages = sorted(set.intersection(*(set(r["stage_ms_per_item"]) for r in records)))
        medians[side] = {k: statistics.median(r[k] for r in records) for k in keys}
        medians[side]["stage_ms_per_item"] = {s: statistics.median(r["stage_ms_per_item"][s] for r in records) for s in stages}
    ratios = {k: medians["b"][k] / medians["a"][k] for k in medians["a"] if k != "stage_ms_per_item" and k in medians["b"]}
    ratios["stage_ms_per_item"] = {s: medians["b"]["stage_ms_per_item"][s] / medians["a"]["stage_ms_per_item"][s]
                                   for s in medians["a"]["stage_ms_per_item"] if s in medians["b"]["stage_ms_per_item"]
                                   and medians["a"]["stage_ms_per_item"][s] > 0}
    result = {"a": args.label_a, "b": args.label_b, "command": command, "machine": machine,
              "runs": {args.label_a: sides["a"], args.label_b: sides["b"]},
              "medians": {args.label_a: medians["a"], args.label_b: medians["b"]}, "ratios_b_over_a": ratios}
    json.dump(result, open(args.out, "w"), indent=1)
    print(json.dumps({"medians": result["medians"], "ratios_b_over_a": ratios}, indent=1))


if __name__ == "__main__":
    main()
