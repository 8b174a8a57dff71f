"""Draw the dataset figures of the docs: ``docs/_static/trajectories.png`` and ``ocean.png``.

Usage::

    python docs/make_figures.py [--seed 0] [--ocean-root PATH] [--out docs/_static]

The ocean drifter file is read from ``--ocean-root`` (a folder holding
``dataBuoys.jld2`` directly or in ``raw/``; default: ``../shared/data/ocean_drifters``
beside the repository, else ``data/ocean_drifters``, where it is downloaded).
Processed files go to a temporary folder, so nothing is written beside the data.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from topo_contrastive.datasets import OceanDrifters, SyntheticTrajectories, plot_complex  # noqa: E402


def pick(labels: np.ndarray, lengths: np.ndarray, per_class: int, min_len: int) -> list[int]:
    """The first ``per_class`` samples of each class whose path has ``>= min_len`` nodes."""
    out = []
    for c in (0, 1):
        idx = np.flatnonzero((labels == c) & (lengths >= min_len))
        out.extend(int(i) for i in idx[:per_class])
    return out


def main(
    seed: int = 0, ocean_root: str | None = None, out: str | None = None, dpi: int = 100
) -> None:
    """Write ``trajectories.png`` and ``ocean.png`` into ``out`` (default ``docs/_static``)."""
    out_dir = Path(out) if out else REPO / "docs" / "_static"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # the shipped task unless a folder holding dataBuoys.jld2 is given
        root = Path(ocean_root) if ocean_root else Path(tmp) / "ocean_root"
        datasets = [
            # (dataset, shortest path drawn, file, title)
            (
                SyntheticTrajectories(os.path.join(tmp, "trajectories"), seed=seed, log=False),
                0,
                "trajectories.png",
                "SyntheticTrajectories",
            ),
            (
                OceanDrifters(str(root), processed_dir=os.path.join(tmp, "ocean"), log=False),
                15,
                "ocean.png",
                "OceanDrifters",
            ),
        ]
        for ds, min_len, name, label in datasets:
            y = ds._data.y.numpy()
            lengths = np.array([len(p) for p in ds.paths()])
            idx = pick(y, lengths, 2, min_len=min_len)
            plot_complex(
                ds,
                paths=[ds.path(i) for i in idx],
                labels=y[idx],
                path=str(out_dir / name),
                title=f"{label}: class 0 (red), class 1 (blue)",
                dpi=dpi,
            )
    for name in ("trajectories.png", "ocean.png"):
        print(f"{out_dir / name}: {(out_dir / name).stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of SyntheticTrajectories")
    parser.add_argument(
        "--ocean-root",
        default=None,
        help="optional folder holding the original dataBuoys.jld2 (directly or in raw/); "
        "default: the task shipped with the package",
    )
    parser.add_argument("--out", default=None, help="output folder (default docs/_static)")
    parser.add_argument("--dpi", type=int, default=100, help="resolution of the PNGs")
    args = parser.parse_args()
    main(seed=args.seed, ocean_root=args.ocean_root, out=args.out, dpi=args.dpi)
