"""``python -m experiments search``: the small hyper-parameter search (validation split /
training-split cross-validation) of :func:`~experiments.grid_search`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from experiments import _helpers as h
from experiments.cli import _options
from topo_contrastive.training.fields import parse_grid


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``search`` subcommand and its options to ``sub``."""
    from topo_contrastive.training.configs import DATASET_NAMES

    p = sub.add_parser("search", help="the hyper-parameter search (validation / training CV)")
    p.add_argument("--dataset", required=True, help=f"one of {', '.join(DATASET_NAMES)}")
    p.add_argument("--config", required=True, help="a row of Table 1 to tune")
    p.add_argument(
        "--grid",
        nargs="+",
        required=True,
        metavar="FIELD=V1,V2",
        help="values to try per configuration field, parsed as the field's type, e.g. "
        "lr=0.1,0.01 temperature=0.5,0.2 normalize=true,false (booleans: true/false or 1/0) "
        "'gamma=(1,1,1),(0,1,1)' 'perturb=(gradient),(gradient,curl)'; K=1,2,3 sets "
        "K_down = K_up; values may also be separated by ';': 'gamma=[1,1,1];[0,0,1]'",
    )
    h.add_epochs(p, "epochs", shown="the configuration's, 30-60")
    p.add_argument("--seeds", type=h.splits_int, default=2,
                   help=f"encoders/splits per point, at most {h.MAX_SPLITS:,} (default: 2)")
    p.add_argument(
        "--eval-epochs", type=h.epochs_int, nargs="+", default=(), metavar="E",
        help="contrastive rows: score each encoder after each of these epochs of one run "
        "(one CSV row per epoch count; default: after the last epoch only)",
    )  # fmt: skip
    p.add_argument("--splits-per-seed", type=h.int_between(1, 100), default=1,
                   help="evaluation splits per encoder/seed, at most 100 (default: 1)")
    h.add_edition_options(p)
    p.add_argument(
        "--out", required=True, type=h.out_path,
        help="CSV file of the search results (with its status <out>.json and, once every point "
        "is done, the marker <out>.COMPLETE)",
    )  # fmt: skip
    h.add_overwrite(p, "exists")
    _options.add_run_options(p)
    _options.add_data_options(p)
    return p


def check_grid(base: Any, grid: dict[str, list[Any]]) -> None:
    """Check every value of ``grid`` against the configuration ``base``, before any work.

    Raises:
        ValueError: a value that the configuration refuses (the message names
            ``--grid FIELD=VALUE``).
    """
    from experiments.search import grid_point_config

    for key, values in grid.items():
        for value in values:
            try:
                grid_point_config(base, {key: value})
            except (TypeError, ValueError) as err:
                raise ValueError(f"--grid {key}={value!r}: {err}") from None


def run(args: argparse.Namespace) -> int:
    """Search as ``args`` say and print the best point as JSON; returns the exit status.

    Raises:
        ValueError: an unknown configuration, dataset or field, a bad ``--grid`` value, an
            existing ``--out`` without ``--overwrite`` or an unwritable one (before any work).
    """
    from experiments.search import grid_search
    from topo_contrastive.training.configs import get_config, resolve_dataset_name

    dataset = resolve_dataset_name(args.dataset)
    base = get_config(args.config, dataset, h.edition(args), **h.edition_overrides(args))
    if args.eval_epochs and not base.is_contrastive:
        raise ValueError(
            f"--eval-epochs scores contrastive encoders after some epochs, but {base.name} is "
            "the supervised baseline: drop --eval-epochs"
        )
    grid = parse_grid(args.grid)
    check_grid(base, grid)
    h.check_file_out(args)
    data = _options.settings(args).data.load(dataset)
    out = Path(args.out).expanduser().absolute()
    files = [out, out.with_name(f"{out.name}.json"), h.marker_beside(out)]
    held = h.output_run(out, files=files, overwrite=args.overwrite, reads=h.read_files(args))
    with held as work:
        rows = grid_search(
            data,
            base,
            grid,
            epochs=args.epochs,
            seeds=args.seeds,
            device=args.device,
            out=work / out.name,
            log=h.say,
            eval_epochs=args.eval_epochs,
            splits_per_seed=args.splits_per_seed,
        )
    best = max(rows, key=lambda r: r["score"])
    print(json.dumps({"best": best}, indent=2, default=str))
    return 0
