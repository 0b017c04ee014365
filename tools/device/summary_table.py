#!/usr/bin/env python3
"""Summaries of device runs as one table: strips the per-item records from every *.json in DIR
(so the files stay small enough to bring back) and prints items, wall time, rate, per-GPU items
and kernel-busy seconds, and each stage's busy milliseconds per item. usage: summary_table.py DIR"""
import glob
import json
import sys

for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    s = json.load(open(f))
    s.pop("items", None)
    json.dump(s, open(f, "w"), indent=1)
    t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    busy = {k: round(v * 1e3 / max(t["items"], 1), 3) for k, v in t.get("stage_busy_seconds", {}).items()}
    print(f"{f.split('/')[-1]:28} {t['items']:6} items {t['wall_seconds']:6.3f} s {t['images_per_second']:8.1f}/s "
          f"{per} ms/item {busy}")
