#!/usr/bin/env python3
"""The tables of docs/performance.md from one bench-suite folder (tools/bench-suite.sh):
DIR/suite.json (one record per point of every bench.json, the peers' ratios, and SEP's time on
the crowded fields (deblend, photometry) against imflow's points on them; the records of
workloads without a bench.json in DIR kept from its previous suite.json) and DIR/suite.md
(the same as Markdown). Per point: images/s median (min..max) and its spread, MB/s, megapixels/s,
copy/compute overlap, the shares of the input and output ceilings (`imflow bench --ceiling`), bottleneck,
milliseconds per item of each stage, peak RSS and GPU memory.
Standard library only (the GPU hosts have no NumPy). usage: bench-report.py DIR"""
import json
import pathlib
import sys

# Pixels per input file of each workload (bench-suite.sh's inputs), for megapixels/s.
MEGAPIXELS_PER_FILE = {"astro-2048": 2048 * 2048 / 1e6, "mosaic-32k": 32000 * 32000 / 1e6,
                       "mosaic-16k": 16000 * 16000 / 1e6, "deblend-4096": 4096 * 4096 / 1e6,
                       "deblend-2048": 2048 * 2048 / 1e6, "photometry-4096": 4096 * 4096 / 1e6,
                       "photometry-2048": 2048 * 2048 / 1e6}


def megapixels_per_file(name):
    for prefix, mpix in MEGAPIXELS_PER_FILE.items():
        if name.startswith(prefix):
            return mpix
    return None


def significant(value, digits=4):
    """value rounded to `digits` significant digits (rates span 0.3 to 20,000 per second)."""
    return float(f"{value:.{digits}g}") if value else value


def point_record(name, bench, point):
    rate = point["images_per_second"]
    items = point["items"]
    runs = [r for r in point.get("runs", []) if isinstance(r, dict)]
    files = point.get("files") or items
    record = {
        "workload": name,
        "point": point["label"] or "default",
        "device": bench["device"],
        "items": items,
        "images_per_second": significant(rate["median"]),
        "images_per_second_min": significant(rate["min"]),
        "images_per_second_max": significant(rate["max"]),
        "spread_percent": round(100 * (rate["max"] - rate["min"]) / rate["median"], 1) if rate["median"] else None,
        "megabytes_per_second": round(point["megabytes_per_second"]["median"], 0),
        "wall_seconds": significant(point["wall_seconds"]["median"]),
        # The whole `imflow run` as a user waits for it (listing, pinned buffers, and the summary and
        # merged catalog after the last item); absent from benches made before it was recorded.
        "end_to_end_images_per_second": (significant(point["end_to_end_images_per_second"]["median"])
                                         if "end_to_end_images_per_second" in point else None),
        "bottleneck": point["bottleneck"]["stage"] if point.get("bottleneck") else None,
        "copy_overlap": None if point.get("copy_overlap_fraction") is None else round(point["copy_overlap_fraction"], 2),
        "stage_ms_per_item": {k: round(1e3 * v / items, 3) for k, v in sorted(point["stage_busy_seconds"].items())},
        "peak_rss_megabytes": round(point["peak_rss_megabytes"]) if point.get("peak_rss_megabytes") else None,
        "peak_device_megabytes": round(point["peak_device_megabytes"]) if point.get("peak_device_megabytes") else None,
        "engine": point["engine"],
        "repeats": len(runs),
    }
    mpix = megapixels_per_file(name)
    if mpix is not None:
        record["megapixels_per_second"] = round(mpix * files / point["wall_seconds"]["median"], 0)
    if point.get("scaling"):
        record["speedup"] = round(point["scaling"].get("speedup", 1.0), 2)
    for side in ("input", "output"):  # `imflow bench --ceiling`
        ceiling = bench.get(f"{side}_ceiling", {}).get("images_per_second")
        if ceiling and f"{side}_ceiling_fraction" in point:
            record[f"{side}_ceiling_images_per_second"] = significant(ceiling["median"])
            record[f"{side}_ceiling_fraction"] = round(point[f"{side}_ceiling_fraction"], 2)
    return record


def peers_records(path):
    summary = json.loads(path.read_text())
    return {"workload": path.stem, "summary": summary}


def sep_records(folder):
    """Per tools/crowded_fields.py SEP timing (NAME-sep.json): SEP's seconds per image (with its
    extraction and photometry apart where it timed both) and its ratio to each imflow point on the
    same fields (NAME-gpu.json, NAME-cpu-1thread.json, ...)."""
    out = []
    for path in sorted(folder.glob("*-sep.json")):
        sep = json.loads(path.read_text())
        if path.name.startswith("peers") or "median_seconds" not in sep:
            continue  # the peers comparison's own timing files (tools/peers)
        tag = path.stem[:-len("-sep")]
        summary = {"sep_version": sep["sep_version"], "settings": sep["settings"],
                   "sep_seconds_per_image": sep["median_seconds"], "sep_objects_per_image": sep["images"][0]["objects"]}
        for part in ("extract", "photometry"):
            if f"median_{part}_seconds" in sep:
                summary[f"sep_{part}_seconds_per_image"] = sep[f"median_{part}_seconds"]
        for kind in ("cpu", "cpu-1thread", "gpu"):  # the points of bench-suite.sh's crowded-field parts
            bench_path = folder / f"{tag}-{kind}.json"
            if not bench_path.exists():
                continue
            for point in json.loads(bench_path.read_text()).get("points", []):
                rate = point["images_per_second"]["median"]
                key = kind + (f" {point['label']}" if point["label"] else "")
                summary[f"imflow_{key}_images_per_second"] = significant(rate)
                summary[f"sep_over_imflow_{key}"] = significant(sep["median_seconds"] * rate, 3)
        out.append({"workload": f"{tag} against SEP", "summary": summary})
    return out


def ceiling_share(record, side):
    """The point's share of its bench's input or output ceiling ("52% of 2090/s"), or empty."""
    if f"{side}_ceiling_fraction" not in record:
        return ""
    return f"{100 * record[f'{side}_ceiling_fraction']:.0f}% of {record[f'{side}_ceiling_images_per_second']:g}/s"


def markdown(records, peers):
    lines = ["| workload | point | device | images/s median (min..max) | spread | end to end images/s | MB/s | Mpix/s | overlap | of the input ceiling | of the output ceiling | bottleneck | ms per item by stage |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in records:
        stages = ", ".join(f"{k} {v:g}" for k, v in r["stage_ms_per_item"].items())
        lines.append(f"| {r['workload']} | {r['point']} | {r['device']} | {r['images_per_second']:g} "
                     f"({r['images_per_second_min']:g}..{r['images_per_second_max']:g}) | {r['spread_percent']}% | "
                     f"{'' if r['end_to_end_images_per_second'] is None else format(r['end_to_end_images_per_second'], 'g')} | "
                     f"{r['megabytes_per_second']:g} | {r.get('megapixels_per_second', '')} | "
                     f"{'' if r['copy_overlap'] is None else r['copy_overlap']} | "
                     f"{ceiling_share(r, 'input')} | {ceiling_share(r, 'output')} | {r['bottleneck']} | {stages} |")
    for p in peers:
        lines += ["", f"### {p['workload']}", "", "```", json.dumps(p["summary"], indent=1), "```"]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = pathlib.Path(sys.argv[1])
    records, peers = [], []
    for path in sorted(folder.glob("*.json")):
        if path.name in ("suite.json", "machine.json"):
            continue
        if path.name.startswith("peers"):  # the suite's peers part writes peers-<size>.json; the
            if path.stem[len("peers-"):].isdigit():  # peers comparison's own files are not the suite's
                peers.append(peers_records(path))
            continue
        if path.name.endswith("-sep.json"):
            continue
        bench = json.loads(path.read_text())
        if "points" not in bench:
            continue
        # Only `imflow bench` points: other tools' files (mri-io-levels.json) have points of their own.
        records += [point_record(path.stem, bench, point) for point in bench["points"] if "images_per_second" in point]
    peers += sep_records(folder)
    # A part rerun into a folder that keeps only suite.json for the others (one part per call):
    # the other workloads' records stay as they were.
    previous = folder / "suite.json"
    if previous.exists():
        measured = {record["workload"] for record in records}
        kept = [r for r in json.loads(previous.read_text()).get("points", []) if r["workload"] not in measured]
        records = sorted(kept + records, key=lambda record: record["workload"] + ".json")  # the files' order
    machine = json.loads((folder / "machine.json").read_text()) if (folder / "machine.json").exists() else {}
    (folder / "suite.json").write_text(json.dumps({"machine": machine, "points": records,
                                                   "peers": peers}, indent=1) + "\n")
    (folder / "suite.md").write_text(markdown(records, peers))
    print((folder / "suite.md").read_text())


if __name__ == "__main__":
    main()
