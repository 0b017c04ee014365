"""Plots completeness against S/N for each tool (one panel per PSF, sizes pooled) from
OUT/truth.json into OUT/completeness.png. Runs under /usr/bin/python3 (Debian's matplotlib).
Usage: plot_peers.py OUT"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def pooled_curve(fields: dict, psf: str):
    """(bin centres, completeness) over the fields of one PSF, counts pooled."""
    stars, found, centres = {}, {}, {}
    for field, r in fields.items():
        if not field.endswith(psf):
            continue
        for b in r["completeness_by_snr"]:
            lo = b["snr_lo"]
            stars[lo] = stars.get(lo, 0) + b["stars"]
            found[lo] = found.get(lo, 0) + (b["completeness"] or 0) * b["stars"]
            hi = b["snr_hi"] or 2 * lo
            centres[lo] = max(1.0, (max(lo, 1.0) * hi) ** 0.5)
    los = sorted(lo for lo in stars if stars[lo])
    return [centres[lo] for lo in los], [found[lo] / stars[lo] for lo in los]


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "truth.json")) as handle:
        truth = json.load(handle)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, psf in zip(axes, ("gauss", "moffat")):
        for tool, fields in truth["tools"].items():
            x, y = pooled_curve(fields, psf)
            ax.plot(x, y, marker="o", label=tool, linestyle="--" if "global" in tool else "-")
        ax.set_xscale("log")
        ax.set_xlabel("true S/N")
        ax.set_title(f"{psf} PSF, all sizes pooled")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(f"completeness (match within {truth['radius_px']:g} px)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "completeness.png"), dpi=110)
    print(f"plot_peers: {out}/completeness.png")


if __name__ == "__main__":
    main()
