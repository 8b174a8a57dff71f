"""The option groups the experiments' commands share, one per kind of input (the run, the
data, the road networks, the training of the many-complex studies), the one
:class:`~experiments.study.Settings` built from them, and the frame of a study command
(checks before any work, the locked ``--out``, the closing line).

Imports neither torch nor numpy.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from experiments import PROG, _helpers


def fraction(what: str = "a fraction", one: bool = True) -> Callable[[str], float]:
    """An argparse ``type`` parsing ``what`` in ``(0, 1]`` (``one=False``: ``(0, 1)``)."""
    interval = "(0, 1]" if one else "(0, 1)"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as err:
            message = f"expected {what} in {interval}, got {text!r}"
            raise argparse.ArgumentTypeError(message) from err
        if not (0 < value < 1 or (one and value == 1)):  # NaN fails too
            raise argparse.ArgumentTypeError(f"expected {what} in {interval}, got {value:g}")
        return value

    return parse


def positive_float(text: str) -> float:
    """An argparse ``type`` parsing a finite number ``> 0``."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from err
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value:g}")
    return value


def add_run_options(p: argparse.ArgumentParser, device: bool = True) -> None:
    """The run options: ``--threads``, ``--no-progress`` and, with ``device``, ``--device``."""
    if device:
        p.add_argument("--device", default="cpu",
                       help="training device: cpu (default), cuda, cuda:N or auto")
    p.add_argument("--threads", type=_helpers.int_at_least(1, "a positive integer"),
                   default=None, help="torch CPU threads (default: the cores idle at the start, "
                   "at least 1; with --quick: 1)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress output (a bar on a terminal, else a line every 30 s)")


def add_out_options(p: argparse.ArgumentParser, seed: str = "base seed", resume: str = "cells",
                    out: str | None = "output folder") -> None:  # fmt: skip
    """The options of a resumable run's folder: ``--out`` (``out``: its help; ``None``: the
    command adds its own), ``--seed``, ``--resume`` (of the finished ``resume``) and
    ``--overwrite``."""
    if out is not None:
        p.add_argument("--out", required=True, type=_helpers.out_path, help=out)
    p.add_argument("--seed", type=_helpers.seed_int, default=0,
                   help=f"{seed}, at most 2**31 - 1 (default: 0)")  # fmt: skip
    p.add_argument("--resume", action="store_true",
                   help=f"continue a run in --out: its finished {resume} are read back, the rest "
                   "computed; a folder of other settings is refused, naming them, with "
                   "nothing overwritten")  # fmt: skip
    _helpers.add_overwrite(p, "is a non-empty folder")


def add_data_options(p: Any, paper: bool = True) -> None:
    """The data options: ``--data-root`` and, with ``paper``, what builds the paper's
    datasets (``--ocean-raw``, ``--trajectory-points``, ``--trajectory-split``)."""
    if paper:
        _helpers.add_data_options(p)
    else:
        p.add_argument("--data-root", default="data",
                       help="folder of the generated and processed datasets (default: ./data)")


def add_network_options(p: Any, trips: int) -> None:
    """The road-network options: ``--networks``, ``--data-file`` (repeatable) and
    ``--trips`` (default ``trips``)."""
    p.add_argument(
        "--networks", nargs="+", default=[], metavar="NAME",
        help="TNTP road networks shipped by pytspl (needs pip install --no-deps pytspl==0.1.5), "
        "e.g. anaheim chicago-sketch; their labelled trips are built once into --data-root",
    )  # fmt: skip
    p.add_argument(
        "--data-file", action="append", default=[], metavar="PATH",
        help="a network of your own with labels: an edge-flow file (.npz, the format of the "
        "'Your own data' docs, e.g. written by examples/road_networks.py), named by its stem; "
        "repeatable; only read",
    )  # fmt: skip
    p.add_argument("--trips", type=_helpers.int_between(10, 100_000), default=trips,
                   help=f"trips per pytspl network (default: {trips})")


def add_training_options(p: argparse.ArgumentParser, full: Mapping[str, Any],
                         quick: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """The options of the many-complex studies' encoders and their training: ``--fractions``,
    ``--draws``, ``--seeds``, ``--epochs``, ``--label-epochs``, ``--hidden``, ``--layers``,
    ``--batch-size``, ``--budget``, ``--temperature``; their defaults ``full`` (and, with
    ``--quick``, ``quick``) are filled in by :func:`fill_defaults`."""

    def shown(key: str) -> str:
        both = [full[key], *([quick[key]] if quick else [])]
        words = [" ".join(f"{v:g}" for v in x) if isinstance(x, list) else str(x) for x in both]
        return f"default: {words[0]}" + (f"; --quick: {words[1]}" if quick else "")

    p.add_argument("--fractions", type=fraction(), nargs="+", default=None,
                   help=f"labelled fractions of the training split, each in (0, 1] "
                   f"({shown('fractions')})")  # fmt: skip
    p.add_argument("--draws", type=_helpers.int_between(1, 1000), default=None,
                   help=f"stratified labelled subsets per fraction below 1 ({shown('draws')})")
    p.add_argument("--seeds", type=_helpers.int_between(1, _helpers.MAX_PRETRAIN_SEEDS),
                   default=None, help="pre-training seeds, each with its own split "
                   f"({shown('seeds')})")  # fmt: skip
    _helpers.add_epochs(p, "pre-training epochs", shown=shown("epochs").split(": ", 1)[1])
    p.add_argument("--label-epochs", type=_helpers.epochs_int, default=None,
                   help="epochs of fine-tuning and of the supervised SCNN (default: "
                   "max(--epochs, 5))")  # fmt: skip
    p.add_argument("--hidden", "--hidden-channels", dest="hidden", default=None,
                   type=_helpers.int_between(1, _helpers.MAX_CHANNELS),
                   help=f"encoder width ({shown('hidden')})")  # fmt: skip
    p.add_argument("--layers", type=_helpers.int_between(1, 16), default=2,
                   help="encoder layers (default: 2)")
    p.add_argument("--batch-size", type=_helpers.int_between(1, 100_000), default=64,
                   help="samples (complexes) per batch (default: 64)")
    p.add_argument("--budget", type=fraction("a budget", one=False), default=0.3,
                   help="the masks' budget, in (0, 1) (default: 0.3)")
    p.add_argument("--temperature", type=positive_float, default=0.5,
                   help="the contrastive loss's temperature, > 0 (default: 0.5)")


def fill_defaults(args: argparse.Namespace, full: Mapping[str, Any],
                  quick: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """Set every option of ``full`` that was not given to its default (``quick``'s with
    ``--quick``)."""
    preset = quick if quick is not None and getattr(args, "quick", False) else full
    for key, value in preset.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)


def settings(args: argparse.Namespace, **fields: Any) -> Any:
    """The :class:`~experiments.study.Settings` of the parsed options ``args`` (the options
    a command has; ``fields`` override them).

    Raises:
        ValueError: ``--resume`` with ``--overwrite``.
    """
    from experiments.study import DataOptions, Settings

    if getattr(args, "resume", False) and getattr(args, "overwrite", False):
        raise ValueError("--resume keeps the finished cells in --out and --overwrite starts "
                         "over: give one of them")  # fmt: skip
    get = vars(args).get
    files = get("data_file") or []
    data = DataOptions(
        root=Path(get("data_root") or "data").expanduser(),
        datasets=tuple(get("datasets") or ()),
        files=tuple([files] if isinstance(files, str) else files),
        networks=tuple(get("networks") or ()), trips=get("trips") or 400,
        samples=get("samples"), ocean_raw=get("ocean_raw"),
        trajectory_points=get("trajectory_points") or 400,
        trajectory_split=tuple(get("trajectory_split") or (200, 100, 100)),
    )  # fmt: skip
    words = sys.argv[1:] if get("_argv") is None else get("_argv")
    known = {k: get(k) for k in ("seed", "seeds", "splits", "fractions", "draws", "epochs",
                                 "label_epochs", "hidden", "layers", "batch_size", "budget",
                                 "temperature", "rows", "editions", "device", "threads")
             if get(k) is not None}  # fmt: skip
    base = {"out": Path(get("out") or "."), "data": data, "progress": not get("no_progress"),
            "resume": bool(get("resume")), "overwrite": bool(get("overwrite")),
            "command": " ".join([PROG, *map(shlex.quote, words)])}  # fmt: skip
    return Settings(**{**base, **known, **fields})


def check_out(args: argparse.Namespace, figure: str | None = None) -> None:
    """The checks of a study command's ``--out`` before any work: matplotlib for
    ``figure``, a non-empty folder without ``--resume`` or ``--overwrite``, a place that
    cannot be written."""
    if figure is not None:
        _helpers.require_extra("matplotlib", figure)
    if not args.resume:
        _helpers.check_out(args.out, args.overwrite, resume_hint=True)
    _helpers.check_output_possible(args.out)


def networks(args: argparse.Namespace, settings: Any, folder: str,
             figure: str | None = None) -> list[Any]:  # fmt: skip
    """The road networks of ``--networks`` and ``--data-file`` (every data file checked and
    ``--out`` checked first, :func:`check_out`), the networks' trips built once into
    ``<data-root>/<folder>`` (:func:`~experiments.studies.reuse.load_networks`).

    Raises:
        FileNotFoundError: a data file that does not exist.
        ValueError: a data file of many complexes; as :func:`check_out`.
    """
    from experiments.studies.reuse import load_networks

    data = settings.data
    for path in data.files:
        _helpers.require_file(path, "data file")
        _helpers.refuse_many_file(args, path)
    check_out(args, figure)
    return load_networks(data.networks, data.files, data.root / folder, data.trips,
                         settings.seed)  # fmt: skip


def run_in_out(args: argparse.Namespace, owns: Any,
               work: Callable[[Path], tuple[str, int | None, int | None]]) -> int:  # fmt: skip
    """Hold ``--out`` (its entries ``owns``) while ``work(folder)`` runs the study into the
    folder and returns its Markdown, the cells computed and resumed (``None``: not counted);
    print the Markdown and the closing line. Returns the exit status 0."""
    start = time.perf_counter()
    with _helpers.output_run(args.out, overwrite=args.overwrite, resume=args.resume, owns=owns,
                             resume_hint=True, reads=_helpers.read_files(args)) as folder:
        markdown, computed, resumed = work(folder)
    print(markdown)
    if computed is None:
        out = Path(args.out).expanduser().absolute()
        _helpers.say(f"done in {time.perf_counter() - start:.0f} s; outputs in {out}")
    else:
        _helpers.say_done(args.out, start, computed, resumed)
    return 0
