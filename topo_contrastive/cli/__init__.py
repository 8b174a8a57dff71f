"""The ``topo-contrastive`` command line: pre-train, evaluate, reproduce Table 1.

Subcommands:

``pretrain``
    contrastive pre-training of one configuration on one dataset; writes ``encoder.pt``
    (weights only, atomically), ``pretrain.json`` (``"complete": false`` from the start of
    training, ``true`` at the end) and, last, the marker ``COMPLETE`` (a stale marker and the
    previous ``encoder.pt`` are removed before training). Runs under ``torchrun`` with
    DistributedDataParallel (rank 0 alone writes).
``evaluate``
    linear-SVM evaluation of a saved encoder over several random splits.
``embed``
    the embeddings ``[S, D]`` of every sample by a saved encoder (``.npz`` and ``.csv``).
``reproduce``
    the whole of Table 1 on both datasets and Figures 1-2 (``--quick`` for a reduced run).
``search``
    the small hyper-parameter search (validation split / training-split cross-validation);
    writes the CSV after every grid point, its status ``<out>.json`` and, last, the marker
    ``<out>.COMPLETE``.

``pretrain``, ``evaluate`` and ``embed`` take one of the paper's datasets (``--dataset``) or an
edge-flow file of one's own (``--data-file flows.npz``, the format of
:class:`~topo_contrastive.datasets.EdgeFlows`; labels are needed by ``evaluate`` only).

Run ``topo-contrastive <subcommand> --help`` for the options. Also runs as
``python -m topo_contrastive.cli``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]

_PROG = "topo-contrastive"


def _int_at_least(low: int, expected: str):
    """An argparse ``type`` parsing an integer ``>= low`` (``expected`` names it in errors)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from err
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_nonneg_int = _int_at_least(0, "an integer >= 0")

#: seconds between two progress lines when stderr is not a terminal (logs, CI)
_LINE_INTERVAL = 30.0


class _LineProgress:
    """Progress as plain lines on stderr (for logs and CI, where a tqdm bar's carriage
    returns do not show): one line when something finishes, at most every
    :data:`_LINE_INTERVAL` seconds, and always the last one. The text is tqdm's meter
    (``desc: 40%|...| 2/5 [00:03<00:04, ...]``), without the bar."""

    def __init__(self, total: int, desc: str, unit: str) -> None:
        from tqdm import tqdm

        self._meter = tqdm.format_meter
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = 0
        self._postfix = ""
        self._start = time.perf_counter()
        self._last = -float("inf")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if self.n >= self.total or now - self._last >= _LINE_INTERVAL:
            self._last = now
            text = self._meter(
                self.n,
                self.total,
                now - self._start,
                prefix=self.desc,
                unit=self.unit,
                postfix=self._postfix or None,
                bar_format="{l_bar}{n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
            )
            _say(text)

    def set_postfix(self, **values: Any) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        pass


def _progress(args: argparse.Namespace, total: int, desc: str, unit: str) -> Any:
    """A progress display of ``total`` steps: a tqdm bar on a terminal, plain lines
    otherwise (:class:`_LineProgress`), nothing with ``--no-progress``."""
    from tqdm.auto import tqdm

    _announce()
    if args.no_progress or not sys.stderr.isatty():
        if not args.no_progress:
            return _LineProgress(total, desc, unit)
        return tqdm(total=total, disable=True)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)


def _check_out(
    path: str | os.PathLike, overwrite: bool, kind: str = "folder", resume_hint: bool = False
) -> None:
    """Refuse to write into a non-empty output folder (or over an existing file) unless
    ``--overwrite`` was given; checked before any work."""
    out = Path(path).expanduser()
    hint = ", or --resume to continue the run there" if resume_hint else ""
    if overwrite or not out.exists():
        return
    if kind == "file" or not out.is_dir():
        raise ValueError(
            f"--out '{out}' already exists; pass --overwrite to replace it, or choose another "
            "path"
        )
    entries = sorted(p.name for p in out.iterdir())
    if entries:
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        raise ValueError(
            f"--out '{out}' is not empty (it holds {shown}); pass --overwrite to write into it "
            f"(files of the same names are replaced){hint}, or choose another folder"
        )


def _add_overwrite(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=f"write even if --out {what} (default: refuse, so that an earlier run is kept)",
    )


def _add_data_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument(
        "--data-root",
        default="data",
        help="folder of the datasets (default: ./data); a named ocean raw file is copied "
        "to <data-root>/ocean_drifters/raw/",
    )
    g.add_argument(
        "--ocean-raw",
        default=None,
        metavar="PATH",
        help="optional: build the ocean drifter task from this original dataBuoys.jld2 "
        "(checked against its sha256; gives exactly the task shipped with the package) "
        "instead of the shipped one (default: $TOPO_CONTRASTIVE_OCEAN_FILE where set, else "
        "the shipped task: no file, no network); a dataset already processed under "
        "--data-root was built from a file with the same sha256",
    )
    g.add_argument(
        "--trajectory-points",
        type=_positive_int,
        default=400,
        help="points of the synthetic trajectory complex (default: 400, the paper's)",
    )
    g.add_argument(
        "--trajectory-split",
        type=_positive_int,
        nargs=3,
        default=(200, 100, 100),
        metavar=("TRAIN", "VAL", "TEST"),
        help="train/validation/test sizes of the trajectory task (default: 200 100 100)",
    )


def _add_data_choice(p: argparse.ArgumentParser, configured: bool = True) -> None:
    """``--dataset NAME`` or ``--data-file PATH`` (exactly one), and ``--tuned-for``."""
    from topo_contrastive.experiments.configs import DATASET_NAMES

    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--dataset", help=f"one of the paper's datasets: {', '.join(DATASET_NAMES)}")
    g.add_argument(
        "--data-file",
        metavar="PATH",
        help="an edge-flow file of your own (.npz: B1/B2 as COO arrays or edge_index, flows "
        "and/or node paths, optional labels; see the 'Your own data' docs); it is only read",
    )
    if configured:
        p.add_argument(
            "--tuned-for",
            choices=DATASET_NAMES,
            default="ocean",
            help="with --data-file: take the configuration's hyper-parameters as tuned for this "
            "task (default: ocean, the real-data task)",
        )


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        default="cpu",
        help="training device: cpu (default), cuda, cuda:N or auto",
    )
    p.add_argument(
        "--threads",
        type=_positive_int,
        default=None,
        help="torch CPU threads (default: the cores idle at the start, measured over 0.1 s, "
        "at least 1; `reproduce --quick`: 1, for numbers any machine repeats). Measured on "
        "2 cores: benchmarks/results/bench_threads.md",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress output (a bar on a terminal, else a line every 30 s)",
    )


def _add_edition_options(p: argparse.ArgumentParser) -> None:
    from topo_contrastive.experiments.configs import EDITIONS

    p.add_argument(
        "--edition",
        default="paper",
        help=f"which frozen configuration of the row: {', '.join(EDITIONS)} (default: paper, "
        "the paper's encoder; hodge: the HodgeReadout edition)",
    )
    p.add_argument(
        "--readout",
        default=None,
        choices=("mean", "sum", "max", "hodge"),
        help="override the configuration's readout (hodge: HodgeReadout, the mean over edges "
        "and the harmonic coordinates of the last layer's features)",
    )


def _edition_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {"readout": args.readout} if getattr(args, "readout", None) else {}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``topo-contrastive``."""
    from topo_contrastive import __version__
    from topo_contrastive.experiments.configs import (
        CONFIG_NAMES,
        DATASET_NAMES,
        EDITIONS,
        get_config,
    )

    contrastive = [c for c in CONFIG_NAMES if get_config(c, DATASET_NAMES[0]).is_contrastive]
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Hodge-aware contrastive learning (Moellers et al., ICASSP 2024): "
        "pre-train, evaluate, reproduce Table 1.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("pretrain", help="contrastive pre-training of one configuration")
    _add_data_choice(p)
    p.add_argument(
        "--config",
        required=True,
        help=f"a contrastive row of Table 1: {', '.join(contrastive)} (the supervised SCNN "
        "row runs in `reproduce`)",
    )
    p.add_argument("--seed", type=_nonneg_int, default=0, help="seed (default: 0)")
    p.add_argument(
        "--epochs",
        type=_positive_int,
        default=None,
        help="epochs (default: the configuration's, 30-60)",
    )
    p.add_argument(
        "--hidden-channels",
        type=_positive_int,
        default=None,
        help="encoder width (default: the configuration's 64)",
    )
    _add_edition_options(p)
    p.add_argument(
        "--set",
        nargs="+",
        default=(),
        metavar="FIELD=VALUE",
        help="change configuration fields, parsed as the field's type, e.g. temperature=0.5 "
        "'gamma=(0,1,1)' K=3 (sets K_down and K_up)",
    )
    p.add_argument(
        "--out", required=True, help="output folder: encoder.pt and pretrain.json are written there"
    )
    p.add_argument(
        "--dist-timeout",
        type=_positive_int,
        default=600,
        metavar="SECONDS",
        help="under torchrun: how long a process waits for the others in a collective "
        "(rendezvous, gradient all-reduce, final barrier) before it fails instead of hanging "
        "(default: 600)",
    )
    _add_overwrite(p, "is a non-empty folder")
    _add_run_options(p)
    _add_data_options(p)

    p = sub.add_parser("evaluate", help="linear-SVM evaluation of a saved encoder")
    p.add_argument("--checkpoint", required=True, help="encoder.pt written by `pretrain`")
    _add_data_choice(p)
    p.add_argument(
        "--seeds", type=_positive_int, default=16, help="number of random splits (default: 16)"
    )
    p.add_argument("--seed", type=_nonneg_int, default=0, help="first split seed (default: 0)")
    p.add_argument(
        "--config",
        default=None,
        help="if given, the checkpoint's architecture must match this configuration's",
    )
    p.add_argument(
        "--edition",
        default="paper",
        help=f"edition of --config: {', '.join(EDITIONS)} (default: paper)",
    )
    p.add_argument(
        "--hidden-channels",
        type=_positive_int,
        default=None,
        help="if given, the checkpoint's width must be this",
    )
    p.add_argument("--out", default=None, help="write the per-split results to this JSON file")
    _add_overwrite(p, "exists")
    _add_run_options(p)
    _add_data_options(p)

    p = sub.add_parser(
        "embed", help="embeddings of every sample by a saved encoder (.npz and .csv)"
    )
    p.add_argument("--checkpoint", required=True, help="encoder.pt written by `pretrain`")
    _add_data_choice(p, configured=False)
    p.add_argument(
        "--out",
        required=True,
        help="output folder: embeddings.npz, embeddings.csv and embeddings.json are written there",
    )
    p.add_argument(
        "--batch-size", type=_positive_int, default=256, help="samples per forward (default: 256)"
    )
    _add_run_options(p)
    _add_data_options(p)

    p = sub.add_parser(
        "reproduce", help="Table 1 (both editions, reference rows) on both datasets, Figures 1-2"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="reduced settings (a few minutes on 2 CPU cores; NOT the paper's protocol)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: results/full, or results/quick with --quick)",
    )
    p.add_argument("--seed", type=_nonneg_int, default=0, help="base seed (default: 0)")
    p.add_argument(
        "--seeds",
        type=_positive_int,
        default=None,
        help="evaluation splits per row (default: 16; 4 with --quick)",
    )
    p.add_argument(
        "--pretrain-seeds",
        type=_positive_int,
        default=None,
        help="pre-trained encoders per contrastive row (default: 2 per dataset; 1 with --quick)",
    )
    p.add_argument(
        "--epochs",
        type=_positive_int,
        default=None,
        help="epochs of every contrastive run and maximum epochs of the supervised SCNN "
        "(default: the configurations'; fewer with --quick)",
    )
    p.add_argument(
        "--datasets", nargs="+", default=list(DATASET_NAMES), help="datasets (default: both)"
    )
    p.add_argument("--configs", nargs="+", default=list(CONFIG_NAMES), help="rows (default: all)")
    p.add_argument(
        "--figure2-dataset",
        default=None,
        help="dataset of Figure 2's sweep (default: ocean; 'none' to skip it)",
    )
    p.add_argument("--no-figure1", action="store_true", help="skip Figure 1 (embedding distances)")
    p.add_argument(
        "--editions",
        nargs="+",
        default=None,
        help=f"editions of Table 1: {', '.join(EDITIONS)} (default: both; 'hodge' is the "
        "HodgeReadout edition)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the finished runs of an earlier call with the same settings in --out and run "
        "only the rest (refused, with nothing overwritten, if the settings differ)",
    )
    _add_overwrite(p, "is a non-empty folder")
    _add_run_options(p)
    _add_data_options(p)

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
    p.add_argument(
        "--epochs",
        type=_positive_int,
        default=None,
        help="epochs (default: the configuration's, 30-60)",
    )
    p.add_argument(
        "--seeds", type=_positive_int, default=2, help="encoders/splits per point (default: 2)"
    )
    p.add_argument(
        "--eval-epochs",
        type=_positive_int,
        nargs="+",
        default=(),
        metavar="E",
        help="contrastive rows: score each encoder after each of these epochs of one run "
        "(one CSV row per epoch count; default: after the last epoch only)",
    )
    p.add_argument(
        "--splits-per-seed",
        type=_positive_int,
        default=1,
        help="evaluation splits per encoder/seed (default: 1)",
    )
    _add_edition_options(p)
    p.add_argument("--out", required=True, help="CSV file of the search results")
    _add_overwrite(p, "exists")
    _add_run_options(p)
    _add_data_options(p)
    return parser


# ---------------------------------------------------------------------------- helpers
def _progress_enabled(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _setup(args: argparse.Namespace, pinned: str | None = None) -> None:
    """Set the torch thread count and say it in one line (``--threads``, else the idle cores;
    ``reproduce --quick``: 1)."""
    import torch

    from topo_contrastive._numerics import idle_cores, usable_cores

    if args.threads:
        threads, why = args.threads, "--threads"
    elif getattr(args, "quick", False):
        threads, why = 1, "the quick preset's fixed count"
    else:
        idle, cores = idle_cores(), usable_cores()
        if idle is None:
            threads, why = torch.get_num_threads(), "torch's default"
        else:
            threads = max(1, min(idle, cores))
            why = f"{idle} of {cores} cores idle at the start"
    torch.set_num_threads(threads)
    line = f"{_PROG}: {threads} torch thread{'s' if threads > 1 else ''} ({why}"
    _PENDING[:] = [line + (f"; {pinned})" if pinned else ")")]


#: the thread line of :func:`_setup`, printed with the command's first output (so that an
#: invalid command prints its error alone)
_PENDING: list[str] = []


def _announce() -> None:
    """Print the pending thread line once, before the command's first output."""
    while _PENDING:
        print(_PENDING.pop(), file=sys.stderr, flush=True)


def _load(args: argparse.Namespace, name: str) -> Any:
    from topo_contrastive.experiments.data import ExperimentData, load_dataset

    ds = load_dataset(
        name,
        data_root=args.data_root,
        ocean_raw=args.ocean_raw,
        trajectory_points=args.trajectory_points,
        trajectory_split=args.trajectory_split,
    )
    return ExperimentData.from_dataset(ds, name)


def _load_data(args: argparse.Namespace) -> Any:
    """The :class:`ExperimentData` of ``--dataset`` or ``--data-file`` (named by its stem)."""
    from topo_contrastive.experiments.configs import resolve_dataset_name

    if args.data_file is None:
        return _load(args, resolve_dataset_name(args.dataset))
    from topo_contrastive.experiments.data import ExperimentData, load_data_file

    ds = load_data_file(args.data_file, data_root=args.data_root)
    return ExperimentData.from_dataset(ds, Path(args.data_file).stem)


def _config_task(args: argparse.Namespace) -> str:
    """The task whose configurations apply (``--dataset``, else ``--tuned-for``), validated
    before any work."""
    from topo_contrastive.experiments.configs import resolve_dataset_name

    if args.data_file is None:
        return resolve_dataset_name(args.dataset)
    if not os.path.isfile(args.data_file):
        raise FileNotFoundError(f"data file '{args.data_file}' does not exist")
    return args.tuned_for


def _set_fields(config: Any, items: Sequence[str]) -> Any:
    """``config`` with the ``--set FIELD=VALUE`` changes (one value per field)."""
    from topo_contrastive.experiments.search import grid_point_config

    point = {}
    for key, values in _parse_grid(items).items():
        if len(values) != 1:
            raise ValueError(
                f"--set {key} takes one value, got {len(values)} (write tuples in brackets: "
                "'perturb=(gradient,curl)')"
            )
        point[key] = values[0]
    return grid_point_config(config, point) if point else config


def _say(msg: str) -> None:
    _announce()
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- pretrain
def _cmd_pretrain(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    from topo_contrastive.experiments.checkpoint import save_encoder
    from topo_contrastive.experiments.configs import get_config
    from topo_contrastive.experiments.outputs import (
        COMPLETE_MARKER,
        begin_outputs,
        check_output_dir,
        mark_complete,
        write_json,
    )
    from topo_contrastive.experiments.training import pretrain, resolve_device

    task = _config_task(args)
    overrides = {"hidden_channels": args.hidden_channels} if args.hidden_channels else {}
    config = get_config(args.config, task, args.edition, **overrides, **_edition_overrides(args))
    config = _set_fields(config, args.set)
    if not config.is_contrastive:
        raise ValueError(
            f"`pretrain` needs a contrastive configuration; {config.name!r} is the supervised "
            "baseline (run it with `reproduce --configs SCNN`)"
        )
    device = resolve_device(args.device)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    distributed = world > 1
    if distributed and not dist.is_initialized():
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        from datetime import timedelta

        dist.init_process_group(
            backend="nccl" if device.type == "cuda" else "gloo",
            timeout=timedelta(seconds=args.dist_timeout),
        )
    rank = dist.get_rank() if distributed else 0
    try:
        if rank == 0:
            _check_out(args.out, args.overwrite)
        out = check_output_dir(args.out) if rank == 0 else Path(args.out)
        data = _load_data(args)
        dataset = data.name
        epochs = args.epochs or config.epochs
        log = {"dataset": dataset, "config": config.to_dict(), "complex_sizes": list(data.sizes)}
        if args.data_file is not None:
            log.update(data_file=str(Path(args.data_file)), tuned_for=task)
        if rank == 0:  # from here on the folder says the run is not complete
            begin_outputs(out / COMPLETE_MARKER, stale=[out / "encoder.pt"])
            started = {"seed": args.seed, "epochs": epochs, "world_size": world}
            write_json(out / "pretrain.json", {"complete": False, **log, **started})
            bar = _progress(args, epochs, f"pretrain {config.name} {dataset}", "epoch")
        else:
            bar = _progress(argparse.Namespace(no_progress=True), epochs, "", "epoch")

        def tick(epoch: int, loss: float) -> None:
            bar.set_postfix(loss=f"{loss:.4f}")
            bar.update(1)

        result = pretrain(data, config, seed=args.seed, epochs=epochs, device=device, progress=tick)
        bar.close()
        if rank == 0:
            meta = {
                "seed": args.seed,
                "epochs": epochs,
                "world_size": result.world_size,
                "final_loss": result.losses[-1],
            }
            save_encoder(result.encoder, out / "encoder.pt", data, config, **meta)
            write_json(
                out / "pretrain.json",
                {
                    "complete": True,
                    **log,
                    "seconds": result.seconds,
                    "losses": result.losses,
                    "written_by_rank": rank,
                    **meta,
                },
            )
            mark_complete(out / COMPLETE_MARKER, f"pretrained in {result.seconds:.1f} s")
            _say(
                f"pretrained {config.name} on {dataset} ({epochs} epochs, {result.seconds:.1f} s, "
                f"world size {result.world_size}, final loss {result.losses[-1]:.4f}); wrote "
                f"{out / 'encoder.pt'}"
            )
        if distributed:
            dist.barrier()
    finally:
        if distributed and dist.is_initialized():
            dist.destroy_process_group()
    return 0


# ---------------------------------------------------------------------------- evaluate
def _cmd_evaluate(args: argparse.Namespace) -> int:
    import numpy as np

    from topo_contrastive.experiments.checkpoint import load_encoder
    from topo_contrastive.experiments.configs import get_config
    from topo_contrastive.experiments.outputs import write_json
    from topo_contrastive.experiments.reproduce import evaluate_encoder

    task = _config_task(args)
    expected: dict[str, Any] = {}
    if args.config:
        expected.update(get_config(args.config, task, args.edition).architecture())
    if args.hidden_channels:
        expected["hidden_channels"] = args.hidden_channels
    if args.out:
        parent = Path(args.out).expanduser().absolute().parent
        from topo_contrastive.experiments.outputs import check_output_dir

        _check_out(args.out, args.overwrite, kind="file")
        check_output_dir(parent, "--out")
    if not os.path.isfile(args.checkpoint):
        raise FileNotFoundError(f"checkpoint '{args.checkpoint}' does not exist")
    data = _load_data(args)
    dataset = data.name
    data.require_labels("evaluate (the linear SVM)")
    encoder, meta = load_encoder(args.checkpoint, data=data, expected=expected)
    seeds = list(range(args.seed, args.seed + args.seeds))
    bar = _progress(args, len(seeds), f"evaluate {meta.get('config', '?')} {dataset}", "split")

    def tick(result: dict[str, Any]) -> None:
        bar.set_postfix(test_acc=f"{100 * result['test_accuracy']:.1f}%")
        bar.update(1)

    results = evaluate_encoder(encoder, data, seeds, device=args.device, progress=tick)
    bar.close()
    acc = 100 * np.array([r["test_accuracy"] for r in results])
    line = (
        f"{meta.get('config', '?')} on {dataset}: test accuracy {acc.mean():.1f} ± "
        f"{acc.std():.1f} % over {len(seeds)} splits (linear SVM, C by 10-fold CV)"
    )
    print(line)
    if args.out:
        write_json(
            args.out,
            {
                "checkpoint": str(args.checkpoint),
                "dataset": dataset,
                "metadata": meta,
                "mean_accuracy": float(acc.mean()),
                "std_accuracy": float(acc.std()),
                "splits": results,
            },
        )
    return 0


# ---------------------------------------------------------------------------- embed
def _cmd_embed(args: argparse.Namespace) -> int:
    from topo_contrastive.experiments.checkpoint import load_encoder
    from topo_contrastive.experiments.embeddings import write_embeddings
    from topo_contrastive.experiments.outputs import check_output_dir
    from topo_contrastive.experiments.training import embed

    if args.data_file is not None and not os.path.isfile(args.data_file):
        raise FileNotFoundError(f"data file '{args.data_file}' does not exist")
    if not os.path.isfile(args.checkpoint):
        raise FileNotFoundError(f"checkpoint '{args.checkpoint}' does not exist")
    out = check_output_dir(args.out)
    data = _load_data(args)
    encoder, meta = load_encoder(args.checkpoint, data=data)
    emb = embed(encoder, data, device=args.device, batch_size=args.batch_size)  # [S, D]
    paths = write_embeddings(
        out,
        emb,
        sample_ids=getattr(data.dataset, "sample_ids", None),
        labels=data.labels,
        metadata={
            "checkpoint": str(args.checkpoint),
            "dataset": data.name,
            "data_file": None if args.data_file is None else str(args.data_file),
            "complex_sizes": list(data.sizes),
            "encoder": meta,
        },
    )
    _say(
        f"embedded {emb.shape[0]} samples of {data.name} into {emb.shape[1]} dimensions "
        f"({meta.get('config', '?')} encoder); wrote {paths['npz']} and {paths['csv']}"
    )
    return 0


# ---------------------------------------------------------------------------- reproduce
def _cmd_reproduce(args: argparse.Namespace) -> int:
    import dataclasses

    from topo_contrastive.experiments.configs import (
        get_config,
        resolve_config_name,
        resolve_dataset_name,
    )
    from topo_contrastive.experiments.outputs import check_output_dir
    from topo_contrastive.experiments.reproduce import PRESETS, reproduce

    datasets = [resolve_dataset_name(d) for d in args.datasets]
    configs = [resolve_config_name(c) for c in args.configs]
    if args.out is None:
        args.out = "results/quick" if args.quick else "results/full"
    if not args.resume:  # --resume continues the earlier run in --out (checked by reproduce)
        _check_out(args.out, args.overwrite, resume_hint=True)
    check_output_dir(args.out)  # before any work
    preset = PRESETS["quick" if args.quick else "full"]
    changes: dict[str, Any] = {}
    if args.epochs:
        changes["epochs"] = {d: args.epochs for d in preset.epochs}
        changes["supervised_epochs"] = {d: args.epochs for d in preset.epochs}
        changes["figure2_epochs"] = args.epochs
    if args.seeds:
        changes["num_splits"] = args.seeds
        changes["figure2_splits"] = min(preset.figure2_splits, args.seeds)
    if args.pretrain_seeds:
        changes["pretrain_seeds"] = {d: args.pretrain_seeds for d in preset.pretrain_seeds}
        changes["figure2_pretrain_seeds"] = min(preset.figure2_pretrain_seeds, args.pretrain_seeds)
    if args.figure2_dataset is not None:
        f2 = args.figure2_dataset
        changes["figure2_dataset"] = None if f2.lower() == "none" else resolve_dataset_name(f2)
    if args.no_figure1:
        changes["figure1_draws"] = 0
    if changes:
        # fewer epochs than some configuration's own, or fewer splits: not the full protocol
        fewer_epochs = args.epochs is not None and any(
            args.epochs < get_config(c, d).epochs for c in configs for d in datasets
        )
        reduced = preset.reduced or fewer_epochs or bool(args.seeds and args.seeds < 16)
        preset = dataclasses.replace(preset, reduced=reduced, **changes)
    if preset.reduced:
        _say(
            f"NOTE: reduced settings ({preset.describe()}); the numbers are NOT the full "
            "protocol (the configurations' epochs, 16 splits)."
        )
    command = (
        " ".join([_PROG, *map(shlex.quote, sys.argv[1:])])
        if args._argv is None
        else (" ".join([_PROG, *map(shlex.quote, args._argv)]))
    )
    start = time.perf_counter()
    result = reproduce(
        lambda name: _load(args, name),
        args.out,
        preset=preset,
        dataset_names=datasets,
        config_names=configs,
        seed=args.seed,
        device=args.device,
        progress=_progress_enabled(args),
        command=command,
        log=None if _progress_enabled(args) else _say,
        editions=args.editions,
        resume=args.resume,
    )
    table = (result.out / "table1.md").read_text(encoding="utf-8")
    print(table)
    _say(f"done in {time.perf_counter() - start:.0f} s; outputs in {result.out}")
    return 0


# ---------------------------------------------------------------------------- search
#: ``--grid`` words for booleans (case-insensitive) and for ``None`` (optional fields).
_TRUE_WORDS = ("true", "1")
_FALSE_WORDS = ("false", "0")
_NONE_WORDS = ("none", "null")
#: The pseudo-field ``K`` of ``--grid``: sets ``K_down`` and ``K_up`` together.
_GRID_K = "K"


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at the ``sep`` characters outside brackets (``(0,1,1),(1,1,1)``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in {text!r}")
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced brackets in {text!r}")
    parts.append(text[start:])
    return parts


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _coerce(text: str, tp: Any) -> Any:
    """``text`` parsed as a value of the type hint ``tp`` (raises ``ValueError``)."""
    import types
    import typing

    raw = text
    text = _unquote(text)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):  # str | None
        if text.lower() in _NONE_WORDS:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(raw, inner)
    if origin is tuple:
        if (text[:1], text[-1:]) in (("(", ")"), ("[", "]")):
            inner = text[1:-1]
            items = _split_top_level(inner) if inner.strip() else []
            if len(items) > 1 and not items[-1].strip():
                items.pop()  # a trailing comma, as in (gradient,)
        elif len(args) == 2 and args[1] is Ellipsis and text:
            items = [text]  # a bare value is a 1-tuple: perturb=gradient
        else:
            raise ValueError(f"expected a tuple in brackets like (0,1,1), got {raw!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            elem_types = [args[0]] * len(items)
        elif len(items) != len(args):
            raise ValueError(f"expected a tuple of {len(args)} values, got {raw!r}")
        else:
            elem_types = list(args)
        try:
            return tuple(_coerce(i, t) for i, t in zip(items, elem_types, strict=True))
        except ValueError as err:
            raise ValueError(f"{err} (in {raw!r})") from None
    if not text:
        raise ValueError(f"expected a value, got {raw!r}")
    if tp is bool:
        if text.lower() in _TRUE_WORDS:
            return True
        if text.lower() in _FALSE_WORDS:
            return False
        raise ValueError(f"expected a bool (true/false or 1/0), got {raw!r}")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {raw!r}") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a real number, got {raw!r}") from None
    if tp is str:
        return text
    raise TypeError(f"cannot parse values of type {tp!r}")  # a new field type: extend _coerce


def _parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """The ``--grid FIELD=V1,V2 ...`` entries as ``{field: [values]}``, typed per field.

    Every value is parsed as the type of the :class:`ExperimentConfig` field it sets
    (``K`` is an integer that sets ``K_down`` and ``K_up``): booleans as ``true``/``false``
    (any case) or ``1``/``0``; integers; real numbers; strings (quotes optional); ``none``
    or ``null`` for an optional field; tuples in brackets, ``gamma=(0,1,1)`` or
    ``perturb=(gradient,curl)`` (a bare string is a 1-tuple: ``perturb=gradient``). Values
    are separated by commas outside brackets (``gamma=(1,1,1),(0,1,1)``), or all by ``;``
    when one is present (``gamma=[1,1,1];[0,0,1]``).

    Raises:
        ValueError: an entry without ``=``, an unknown or repeated field, ``K`` together with
            ``K_down`` / ``K_up``, or a value that does not parse as its field's type (the
            message names the field and the value).
    """
    import dataclasses
    import typing

    from topo_contrastive.experiments.configs import ExperimentConfig

    hints = typing.get_type_hints(ExperimentConfig)
    types_ = {f.name: hints[f.name] for f in dataclasses.fields(ExperimentConfig)}
    types_[_GRID_K] = int
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--grid entries look like FIELD=V1,V2; got {item!r}")
        key, values = (s.strip() for s in item.split("=", 1))
        if key not in types_:
            raise ValueError(
                f"unknown configuration field {key!r} in --grid; choose among "
                f"{', '.join(sorted(types_))}"
            )
        if key in grid:
            raise ValueError(f"--grid field {key!r} is given twice")
        try:
            texts = values.split(";") if ";" in values else _split_top_level(values)
            grid[key] = [_coerce(text, types_[key]) for text in texts]
        except ValueError as err:
            raise ValueError(f"--grid {key}={values}: field {key!r}: {err}") from None
    if _GRID_K in grid and {"K_down", "K_up"} & set(grid):
        raise ValueError("--grid K sets both K_down and K_up; do not also give K_down or K_up")
    return grid


def _cmd_search(args: argparse.Namespace) -> int:
    from topo_contrastive.experiments.configs import get_config, resolve_dataset_name
    from topo_contrastive.experiments.outputs import check_output_dir
    from topo_contrastive.experiments.search import grid_point_config, grid_search

    dataset = resolve_dataset_name(args.dataset)
    base = get_config(args.config, dataset, args.edition, **_edition_overrides(args))
    grid = _parse_grid(args.grid)
    for key, values in grid.items():  # every value is validated before any work
        for value in values:
            try:
                grid_point_config(base, {key: value})
            except (TypeError, ValueError) as err:
                raise ValueError(f"--grid {key}={value!r}: {err}") from None
    _check_out(args.out, args.overwrite, kind="file")
    check_output_dir(Path(args.out).expanduser().absolute().parent, "--out")
    data = _load(args, dataset)
    rows = grid_search(
        data,
        base,
        grid,
        epochs=args.epochs,
        seeds=args.seeds,
        device=args.device,
        out=args.out,
        log=_say,
        eval_epochs=args.eval_epochs,
        splits_per_seed=args.splits_per_seed,
    )
    best = max(rows, key=lambda r: r["score"])
    print(json.dumps({"best": best}, indent=2, default=str))
    return 0


_COMMANDS = {
    "pretrain": _cmd_pretrain,
    "evaluate": _cmd_evaluate,
    "embed": _cmd_embed,
    "reproduce": _cmd_reproduce,
    "search": _cmd_search,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``topo-contrastive``; returns the exit status.

    Bad input (an unknown configuration or dataset, a mismatching checkpoint, an unwritable
    output folder, a missing ocean file) prints ``topo-contrastive: error: ...`` to stderr and
    returns 2, without writing a result file.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    pinned = None
    if "reproduce" in words and "--quick" in words:
        from topo_contrastive._numerics import pin_code_paths

        pinned = pin_code_paths()  # before torch and numpy load their libraries
    parser = build_parser()
    args = parser.parse_args(None if argv is None else list(argv))
    args._argv = None if argv is None else list(argv)
    try:
        _setup(args, pinned)
        return _COMMANDS[args.command](args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        _PENDING.clear()
        print(f"{_PROG}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
