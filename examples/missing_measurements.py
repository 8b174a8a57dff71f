"""Missing measurements: edge flows with unobserved edges at test time, from Python.

The study of :mod:`experiments.studies.missing_measurements` (the command
``python -m experiments missing-measurements`` runs the same, with more options; the results page
docs/results/missing_measurements.md says what it measures and how to read it): every row's
probe is trained on complete flows and tested on flows of which 10, 30 or 50 % of the edges
are unobserved, at random or a region around a node, with the unobserved entries set to zero
or filled in by the flow-conservation interpolation of Jia et al. (KDD 2019).

Datasets: the paper's trajectories and ocean drifters and, with ``--networks``, road
networks of `pytspl` with routed trips. Writes ``missing_measurements.{json,csv,md,png}`` to
``--out``; every finished cell (dataset x split) is kept in ``--out``/cells and a second call
with the same settings resumes from there.

    python examples/missing_measurements.py --out runs/missing --networks anaheim chicago-sketch
    python examples/missing_measurements.py --out /tmp/mm --quick       # a smoke test
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(
    out: Path,
    datasets: tuple[str, ...] = ("trajectory", "ocean"),
    networks: tuple[str, ...] = (),
    fractions: tuple[float, ...] = (0.1, 0.3, 0.5),
    splits: int = 3,
    epochs: int | None = None,
    trips: int = 1000,
    seed: int = 0,
    data_root: Path = Path("data"),
) -> dict[str, Any]:
    """Load the datasets, run the study into ``out`` (resumable) and write its tables and
    figure; returns the study's summary.

    Raises:
        ValueError: a fraction outside ``(0, 1)``, an unknown dataset (before anything is
            written); ``out`` holds a run of other settings (named).
    """
    from experiments.studies.missing_measurements import (
        check_study,
        load_study_data,
        missing_measurements_study,
        write_missing,
    )
    from experiments.study import DataOptions, Settings
    from topo_contrastive._utils.outputs import output_run

    data = DataOptions(root=data_root, datasets=tuple(datasets), networks=tuple(networks),
                       trips=trips)
    items = load_study_data(data, seed)
    settings = Settings(out, seed=seed, fractions=fractions, splits=splits, epochs=epochs,
                        data=data, progress=True)
    check_study(items, settings)  # before `out` is touched
    with output_run(out, resume=True) as folder:  # a lock: one run at a time writes there
        summary = missing_measurements_study(items, settings.replace(out=folder))
        print(write_missing(summary, folder))
    return summary


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--datasets", nargs="*", default=["trajectory", "ocean"],
                   help="the paper's datasets (trajectory ocean)")
    p.add_argument("--networks", nargs="*", default=[],
                   help="pytspl road networks, e.g. anaheim chicago-sketch (none)")
    p.add_argument("--fractions", type=float, nargs="+", default=[0.1, 0.3, 0.5],
                   help="unobserved fractions of the edges, each in (0, 1) (0.1 0.3 0.5)")
    p.add_argument("--splits", type=int, default=3, help="random splits (3)")
    p.add_argument("--epochs", type=int, default=None,
                   help="pre-training epochs (default: the configuration's)")
    p.add_argument("--trips", type=int, default=1000, help="trips per road network (1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the masks, trips, training (0)")
    p.add_argument("--data-root", type=Path, default=Path("data"),
                   help="folder of the datasets (./data)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: the ocean drifters, 30 %% unobserved, 1 split, 1 epoch")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _parse()
    if a.quick:
        a.datasets, a.networks, a.fractions, a.splits, a.epochs = ["ocean"], [], [0.3], 1, 1
    main(a.out, tuple(a.datasets), tuple(a.networks), tuple(a.fractions), a.splits, a.epochs,
         a.trips, a.seed, a.data_root)  # fmt: skip
