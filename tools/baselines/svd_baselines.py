#!/usr/bin/env python3
"""Baselines for the MRI SVD: rank-k SVD reconstruction of a directory of PNG slices with
numpy.linalg.svd (a loop), torch.linalg.svd (batched, on the GPU) and CuPy (a loop and batched),
timed on the same slices, min-max normalized in float32 as imflow does. Writes JSON.

    tools/baselines/svd_baselines.py DIR [--rank 50] [--json OUT.json] [--skip numpy,torch,cupy]

Slices: datasets/fetch_mri.sh (880 PNG slices 181x217 in datasets/data/mri/slices, made by
tools/make_mri_slices.py). Every timing includes the SVD and the rank-k reconstruction of all
slices (the host->device copy of the stack for the GPU libraries, not the PNG decode); GPU timings
synchronize before the clock stops and follow one untimed warm-up pass.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def load(directory):
    from PIL import Image  # pillow is in the device image; imageio as a fallback

    files = sorted(f for f in os.listdir(directory) if f.endswith(".png"))
    stack = []
    for f in files:
        a = np.asarray(Image.open(os.path.join(directory, f)).convert("F"), dtype=np.float32)
        lo, hi = float(a.min()), float(a.max())
        stack.append((a - lo) / (hi - lo) if hi > lo else np.zeros_like(a))
    shapes = {a.shape for a in stack}
    if len(shapes) != 1:
        sys.exit(f"slices of several shapes: {shapes}")
    return np.stack(stack), files


def rel_errors(stack, recon):
    d = np.linalg.norm((stack - recon).reshape(len(stack), -1).astype(np.float64), axis=1)
    n = np.linalg.norm(stack.reshape(len(stack), -1).astype(np.float64), axis=1)
    return np.where(n > 0, d / np.maximum(n, 1e-300), 0.0)


def run_numpy(stack, k):
    out = np.empty_like(stack)
    t0 = time.perf_counter()
    for i, a in enumerate(stack):
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        out[i] = (u[:, :k] * s[:k]) @ vt[:k]
    return time.perf_counter() - t0, out


def run_torch(stack, k):
    import torch

    dev = torch.device("cuda")

    def once():
        a = torch.from_numpy(stack).to(dev)
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        r = (u[:, :, :k] * s[:, None, :k]) @ vh[:, :k, :]
        torch.cuda.synchronize()
        return r

    once()
    t0 = time.perf_counter()
    r = once()
    t = time.perf_counter() - t0
    return t, r.cpu().numpy(), torch.__version__


def run_cupy(stack, k, batched):
    import cupy as cp

    def once():
        a = cp.asarray(stack)
        if batched:
            u, s, vt = cp.linalg.svd(a, full_matrices=False)
            r = (u[:, :, :k] * s[:, None, :k]) @ vt[:, :k, :]
        else:
            r = cp.empty_like(a)
            for i in range(a.shape[0]):
                u, s, vt = cp.linalg.svd(a[i], full_matrices=False)
                r[i] = (u[:, :k] * s[:k]) @ vt[:k]
        cp.cuda.Stream.null.synchronize()
        return r

    once()
    t0 = time.perf_counter()
    r = once()
    t = time.perf_counter() - t0
    return t, cp.asnumpy(r), cp.__version__


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--rank", type=int, default=50)
    p.add_argument("--json", default="svd_baselines.json")
    p.add_argument("--skip", default="")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    stack, files = load(args.directory)
    n = len(stack)
    k = args.rank
    report = {"slices": n, "shape": list(stack.shape[1:]), "rank": k, "directory": args.directory,
              "numpy": np.__version__, "results": []}
    ref = None

    def record(name, seconds, recon, **extra):
        nonlocal ref
        errs = rel_errors(stack, recon)
        entry = {"name": name, "seconds": seconds, "slices_per_s": n / seconds,
                 "mean_rel_frobenius_error": float(errs.mean())}
        if ref is not None:
            entry["max_abs_error_diff_vs_numpy"] = float(np.abs(errs - ref).max())
        entry.update(extra)
        report["results"].append(entry)
        print(f"{name:28s} {seconds:8.3f} s {n / seconds:9.1f} slices/s  mean rel error {errs.mean():.6f}", flush=True)
        return errs

    if "numpy" not in skip:
        t, r = run_numpy(stack, k)
        ref = record("numpy.linalg.svd loop", t, r, threads=os.cpu_count())
    if "torch" not in skip:
        try:
            t, r, v = run_torch(stack, k)
            record("torch.linalg.svd batched", t, r, version=v)
        except Exception as e:  # noqa: BLE001 - report and go on
            report["results"].append({"name": "torch.linalg.svd batched", "error": repr(e)})
    if "cupy" not in skip:
        for batched in (False, True):
            name = "cupy.linalg.svd " + ("batched" if batched else "loop")
            try:
                t, r, v = run_cupy(stack, k, batched)
                record(name, t, r, version=v)
            except Exception as e:  # noqa: BLE001
                report["results"].append({"name": name, "error": repr(e)})
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print("wrote", args.json)


if __name__ == "__main__":
    main()
