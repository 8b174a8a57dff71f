"""What the commands of ``topo-contrastive`` share: option types and groups (data choice, run
options, ``--overwrite``), the output check, the thread line, progress display and messages.

Imports neither torch nor numpy at import time (``reproduce --quick`` pins their code paths
before they load): the library is imported inside the functions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

PROG = "topo-contrastive"

#: seconds between two progress lines when stderr is not a terminal (logs, CI)
LINE_INTERVAL = 30.0

#: the thread line of :func:`setup`, printed with the command's first output (so that an
#: invalid command prints its error alone)
PENDING: list[str] = []


# ---------------------------------------------------------------------------- limits
#: The largest seed (``topo_contrastive._utils.checks.MAX_SEED``: generators take seeds below 2**32;
#: the half range leaves room for the derived seeds ``seed + s``).
MAX_SEED = 2**31 - 1
#: The most epochs (``topo_contrastive._utils.checks.MAX_EPOCHS``).
MAX_EPOCHS = 100_000
#: The most splits or seeds a command runs (``--seeds``).
MAX_SPLITS = 1000
#: The most pre-trained encoders per row (``--pretrain-seeds``).
MAX_PRETRAIN_SEEDS = 100
#: The widest encoder (``--hidden-channels``).
MAX_CHANNELS = 4096
#: The most points / samples of the synthetic trajectory task.
MAX_TRAJECTORY = 100_000


# ---------------------------------------------------------------------------- option types
def int_at_least(low: int, expected: str, high: int | None = None):
    """An argparse ``type`` parsing an integer ``>= low`` (and ``<= high``; ``expected``
    names it in errors)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from err
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {value}, above the limit {high:,}"
            )
        return value

    return parse


def int_between(low: int, high: int):
    """An argparse ``type`` parsing an integer in ``[low, high]`` (``low`` 0 or 1)."""
    return int_at_least(low, "a positive integer" if low == 1 else "an integer >= 0", high)


positive_int = int_at_least(1, "a positive integer")
#: ``--seed``: an integer in ``[0, MAX_SEED]``.
seed_int = int_between(0, MAX_SEED)
#: ``--epochs`` and ``--max-epochs``.
epochs_int = int_between(1, MAX_EPOCHS)
#: ``--seeds`` (splits or seeds run).
splits_int = int_between(1, MAX_SPLITS)


def mebibytes(text: str) -> int:
    """An argparse ``type`` parsing a memory size in MiB (a positive number, fractions
    allowed, at most 1 TiB) into bytes."""
    import math

    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a size in MiB, got {text!r}") from err
    if not math.isfinite(value) or value * 2**20 < 1 or value > 2**20:
        raise argparse.ArgumentTypeError(
            f"expected a size in MiB from 1 byte (about 1e-6) to 1 TiB (1048576), got {text!r}"
        )
    return int(value * 2**20)


def out_path(text: str) -> str:
    """An argparse ``type`` for ``--out``: a non-empty path."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a path, got {text!r}")
    return text


def check_seed_range(seed: int, count: int, option: str = "--seed") -> None:
    """The seeds ``seed``, ..., ``seed + count - 1`` a command runs stay in ``[0, MAX_SEED]``.

    Raises:
        ValueError: naming ``option`` and the last seed.
    """
    if seed + count - 1 > MAX_SEED:
        raise ValueError(
            f"{option} {seed} with {count} seeds runs up to seed {seed + count - 1}, above the "
            f"largest seed {MAX_SEED} (2**31 - 1): choose a smaller {option}"
        )


# ---------------------------------------------------------------------------- option groups
def add_overwrite(p: argparse.ArgumentParser, what: str) -> None:
    """``--overwrite`` (``what``: when ``--out`` is refused without it)."""
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=f"write even if --out {what}: the new results are written beside it and "
        "replace the earlier ones only once complete (a refused, failed or interrupted run "
        "leaves them as they were; default: refuse, so that an earlier run is kept)",
    )


def add_seed(p: argparse.ArgumentParser, what: str = "base seed") -> None:
    """``--seed`` (default 0, at most :data:`MAX_SEED`); ``what`` says what it seeds."""
    p.add_argument(
        "--seed", type=seed_int, default=0, help=f"{what}, at most 2**31 - 1 (default: 0)"
    )


def add_checkpoint(p: argparse.ArgumentParser) -> None:
    """``--checkpoint`` (required): an encoder written by ``pretrain``."""
    p.add_argument("--checkpoint", required=True, help="encoder.pt written by `pretrain`")


def add_epochs(
    p: argparse.ArgumentParser, what: str, default: int | None = None, shown: str | None = None
) -> None:
    """``--epochs`` (at most :data:`MAX_EPOCHS`); ``what`` says which, ``shown`` the default
    in words (default: ``default``)."""
    p.add_argument(
        "--epochs", type=epochs_int, default=default,
        help=f"{what}, at most {MAX_EPOCHS:,} (default: {shown or default})",
    )  # fmt: skip


def add_hidden_channels(p: argparse.ArgumentParser, what: str, shown: str) -> None:
    """``--hidden-channels`` (default ``None``: the configuration's, at most
    :data:`MAX_CHANNELS`); ``shown``: that default in words."""
    p.add_argument(
        "--hidden-channels", type=int_between(1, MAX_CHANNELS), default=None,
        help=f"{what}, at most {MAX_CHANNELS:,} (default: {shown})",
    )  # fmt: skip


def add_pretrain_seeds(p: argparse.ArgumentParser, what: str, default: int | None,
                       shown: str) -> None:  # fmt: skip
    """``--pretrain-seeds`` (at most :data:`MAX_PRETRAIN_SEEDS`): encoders pre-trained per
    ``what``; ``shown``: the default in words."""
    p.add_argument(
        "--pretrain-seeds", type=int_between(1, MAX_PRETRAIN_SEEDS), default=default,
        help=f"encoders pre-trained per {what}, at most {MAX_PRETRAIN_SEEDS} (default: {shown})",
    )  # fmt: skip


def add_resume(p: argparse.ArgumentParser, what: str) -> None:
    """``--resume``: keep the finished ``what`` (cells, runs) of an earlier call in --out."""
    p.add_argument(
        "--resume", action="store_true",
        help=f"keep the finished {what} of an earlier call with the same settings in --out and "
        "run only the rest (refused, with nothing overwritten, if the settings differ)",
    )  # fmt: skip


def add_data_options(p: argparse.ArgumentParser) -> None:
    """The ``data`` group: ``--data-root``, ``--ocean-raw`` and the trajectory task's sizes."""
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
        type=int_between(1, MAX_TRAJECTORY),
        default=400,
        help="points of the synthetic trajectory complex (default: 400, the paper's)",
    )
    g.add_argument(
        "--trajectory-split",
        type=int_between(1, MAX_TRAJECTORY),
        nargs=3,
        default=(200, 100, 100),
        metavar=("TRAIN", "VAL", "TEST"),
        help="train/validation/test sizes of the trajectory task (default: 200 100 100)",
    )


def add_data_choice(p: argparse.ArgumentParser, configured: bool = True) -> None:
    """``--dataset NAME`` or ``--data-file PATH`` (exactly one), and, where ``configured``,
    ``--tuned-for``."""
    from topo_contrastive.training.configs import DATASET_NAMES

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


def add_run_options(p: argparse.ArgumentParser) -> None:
    """``--device``, ``--threads`` and ``--no-progress``."""
    p.add_argument(
        "--device",
        default="cpu",
        help="training device: cpu (default), cuda, cuda:N or auto",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch CPU threads (default: the cores idle at the start, measured over 0.1 s, "
        "at least 1; `reproduce --quick`: 1, for numbers any machine repeats); more than the "
        "usable cores is refused. Measured on "
        "2 cores, one pre-training epoch on 1,088 edges: idle 12.9 s with 2 threads, 15.7 s "
        "with 1; with another process busy 38.7 s with 2, 17.7 s with 1 "
        "(benchmarks/results/bench_threads.md)",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress output (a bar on a terminal, else a line every 30 s)",
    )


def add_edition_options(p: argparse.ArgumentParser) -> None:
    """``--edition`` and ``--readout`` (the configuration's frozen edition and readout)."""
    from topo_contrastive.training.configs import EDITIONS

    p.add_argument(
        "--edition",
        default=None,
        help=f"which frozen configuration of the row: {', '.join(EDITIONS)} (paper: the "
        "paper's encoder; hodge: the HodgeReadout edition, at most 4,096 harmonic features). "
        "Default: paper with --dataset; hodge with --data-file (on two road networks and "
        "both paper tasks it scores higher on validation data; the paper's encoder probed "
        "below an untrained one on a road network), paper when --readout is given",
    )
    p.add_argument(
        "--readout",
        default=None,
        choices=("mean", "sum", "max", "hodge"),
        help="override the configuration's readout (hodge: HodgeReadout, the mean over edges "
        "and the harmonic coordinates of the last layer's features)",
    )


def edition(args: argparse.Namespace) -> str:
    """The edition a command runs: ``--edition`` where given; else ``"hodge"`` for a
    ``--data-file`` without ``--readout`` (the default for a user's own data, see
    docs/results/label_efficiency.md), ``"paper"`` otherwise."""
    if getattr(args, "edition", None) is not None:
        return args.edition
    if getattr(args, "data_file", None) is not None and not getattr(args, "readout", None):
        return "hodge"
    return "paper"


def edition_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration fields that ``--readout`` changes."""
    return {"readout": args.readout} if getattr(args, "readout", None) else {}


# ---------------------------------------------------------------------------- checks
def check_out(
    path: str | os.PathLike,
    overwrite: bool,
    kind: str = "folder",
    resume_hint: bool = False,
    writable: bool = False,
) -> None:
    """Refuse to write into a non-empty output folder (or over an existing file) unless
    ``--overwrite`` was given; checked before any work.

    Args:
        path: the ``--out`` folder or file.
        overwrite: ``--overwrite`` was given.
        kind: ``"folder"`` or ``"file"``.
        resume_hint: name ``--resume`` in the message (``reproduce``).
        writable: also check, creating nothing, that the folder could be made and written
            (:func:`~topo_contrastive._utils.files.check_output_possible`).

    Raises:
        ValueError: ``path`` exists (a file) or is a non-empty folder, without ``overwrite``;
            a folder where a file is expected or the other way round; a symbolic link other
            than to an existing folder; another run holds ``path`` (``OutputBusyError``,
            naming it); with ``writable``, a folder that cannot be written.
    """
    from topo_contrastive._utils.files import check_output_possible
    from topo_contrastive._utils.outputs import _resolve_out, check_not_busy, is_machinery

    out = Path(path).expanduser()
    hint = ", or --resume to continue the run there" if resume_hint else ""
    _resolve_out(out, folder=kind == "folder")  # a link only to an existing folder
    check_not_busy(out)  # another run writing there is named first
    if out.exists() and out.is_dir() != (kind == "folder"):  # --overwrite would not help
        raise ValueError(
            f"--out '{out}' is a {'folder' if out.is_dir() else 'file'}, expected a {kind}; "
            "choose another --out"
        )
    if overwrite or not out.exists():
        if writable:
            check_output_possible(out)
        return
    if kind == "file":
        raise ValueError(
            f"--out '{out}' already exists; pass --overwrite to replace it once the new result "
            "is complete, or choose another path"
        )
    entries = sorted(p.name for p in out.iterdir() if not is_machinery(p.name))
    if entries:
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        raise ValueError(
            f"--out '{out}' is not empty (it holds {shown}); pass --overwrite to replace its "
            f"results once the new ones are complete{hint}, or choose another folder"
        )
    if writable:
        check_output_possible(out)


def read_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The files a command reads, as ``(option, path)`` pairs: ``--data-file`` (one or
    several), ``--checkpoint``, ``--ocean-raw``; an output run refuses to replace one
    (``reads`` of :func:`~topo_contrastive._utils.outputs.output_run`)."""
    pairs = []
    for dest in ("data_file", "checkpoint", "ocean_raw"):
        given = getattr(args, dest, None)
        for path in [given] if isinstance(given, (str, os.PathLike)) else given or []:
            pairs.append(("--" + dest.replace("_", "-"), path))
    return pairs


def check_file_out(args: argparse.Namespace) -> None:
    """The ``--out`` file of ``evaluate`` / ``search``: not over an existing file (without
    ``--overwrite``), in a writable folder; checked before any work.

    Raises:
        ValueError: the file exists, or its folder cannot be written.
    """
    from topo_contrastive._utils.files import check_output_dir

    check_out(args.out, args.overwrite, kind="file")
    check_output_dir(Path(args.out).expanduser().absolute().parent, "--out")


def check_json_out(out: str) -> None:
    """The ``--out`` of ``evaluate`` / ``predict-next`` names the JSON summary, and the
    Markdown table goes beside it (``eval.json`` -> ``eval.md``): a name ending in ``.md``
    would put the JSON where the table is expected, so it is refused before any work.

    Raises:
        ValueError: ``out`` ends in ``.md``.
    """
    path = Path(out)
    if path.suffix.lower() == ".md":
        raise ValueError(
            f"--out '{out}' ends in .md, but --out names the JSON summary and the Markdown "
            f"table is written beside it (x.json -> x.md): expected a JSON name such as "
            f"'{path.with_suffix('.json')}'"
        )


# ---------------------------------------------------------------------------- threads, output
def setup(args: argparse.Namespace, pinned: str | None = None) -> None:
    """Set the torch thread count and keep its line for the first output (``--threads``,
    else the idle cores; ``reproduce --quick``: 1).

    Args:
        args: the parsed options (``threads``, and ``quick`` where the command has it).
        pinned: whether the code paths are pinned
            (:func:`~topo_contrastive._utils.numerics.pinned_line`): the thread line ends with
            its plain words (:func:`~topo_contrastive._utils.numerics.pinned_words`) and a second
            line gives it (the environment variables).

    Raises:
        ValueError: ``--threads`` above the usable cores (before any work).
    """
    import torch

    from topo_contrastive._utils import numerics as _numerics

    if args.threads:
        threads, why = args.threads, "--threads"
        cores = _numerics.usable_cores()
        if threads > cores:
            raise ValueError(
                f"--threads {threads} is more than the {cores} usable core"
                f"{'s' if cores > 1 else ''} of this process: expected 1 to {cores}"
            )
    elif getattr(args, "quick", False):
        threads, why = 1, "the quick preset's fixed count"
    else:
        idle, cores = _numerics.idle_cores(), _numerics.usable_cores()
        if idle is None:
            threads, why = torch.get_num_threads(), "torch's default"
        else:
            threads = max(1, min(idle, cores))
            why = f"{idle} of {cores} cores idle at the start"
    torch.set_num_threads(threads)
    _numerics.keep_freed_memory()  # large tensors reuse freed heap memory (no page faults)
    from topo_contrastive._utils.words import count

    prog = getattr(args, "_prog", PROG)
    line = f"{prog}: {count(threads, 'torch thread')} ({why})"
    if pinned is None:
        PENDING[:] = [line]
    else:  # plain words first, the environment variables below
        PENDING[:] = [f"{line}; {_numerics.pinned_words()}", f"{prog}: {pinned}"]


def announce() -> None:
    """Print the pending thread lines once, in order, before the command's first output."""
    while PENDING:
        print(PENDING.pop(0), file=sys.stderr, flush=True)


def say(msg: str) -> None:
    """Print ``msg`` on stderr (after the pending thread line)."""
    announce()
    print(msg, file=sys.stderr, flush=True)


def say_done(out: str, start: float, computed: int, resumed: int) -> None:
    """The closing line of a resumable command: its wall time since ``start``
    (``time.perf_counter()``), the cells it computed and resumed, and the absolute ``out``."""
    import time
    from pathlib import Path

    say(
        f"done in {time.perf_counter() - start:.0f} s ({computed} cells computed, {resumed} "
        f"resumed); outputs in {Path(out).expanduser().absolute()}"
    )


class LineProgress:
    """Progress as plain lines on stderr (for logs and CI, where a tqdm bar's carriage
    returns do not show): one line when something finishes, at most every
    :data:`LINE_INTERVAL` seconds, and always the last one. The text is tqdm's meter
    (``desc: 40%|...| 2/5 [00:03<00:04, ...]``), without the bar.

    Args:
        total: the number of steps.
        desc: the text before the meter.
        unit: the name of a step.
    """

    def __init__(self, total: int, desc: str, unit: str) -> None:
        from tqdm import tqdm

        self._meter = tqdm.format_meter
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = 0
        self._postfix = ""
        self._start = time.perf_counter()
        self._last = -float("inf")

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps done; print a line if one is due."""
        self.n += n
        now = time.perf_counter()
        if self.n >= self.total or now - self._last >= LINE_INTERVAL:
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
            say(text)

    def set_postfix(self, **values: Any) -> None:
        """The ``key=value`` pairs shown after the meter."""
        self._postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        """Nothing to close (the last line is printed by :meth:`update`)."""


def progress_enabled(args: argparse.Namespace) -> bool:
    """Whether a progress bar shows: a terminal and no ``--no-progress``."""
    return not args.no_progress and sys.stderr.isatty()


def progress(args: argparse.Namespace, total: int, desc: str, unit: str) -> Any:
    """A progress display of ``total`` steps: a tqdm bar on a terminal, plain lines
    otherwise (:class:`LineProgress`), nothing with ``--no-progress``."""
    from tqdm.auto import tqdm

    announce()
    if args.no_progress or not sys.stderr.isatty():
        if not args.no_progress:
            return LineProgress(total, desc, unit)
        return tqdm(total=total, disable=True)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)
