"""``topo-contrastive pretrain``: contrastive pre-training of one configuration into a folder
(:func:`~topo_contrastive.cli._runs.pretrain_to_folder`), under ``torchrun`` with
DistributedDataParallel (:func:`~topo_contrastive.cli._runs.process_group`)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from topo_contrastive.cli import _budgets as budgets
from topo_contrastive.cli import _common as common
from topo_contrastive.cli import _inputs as inputs


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``pretrain`` subcommand and its options to ``sub``."""
    from topo_contrastive.training.configs import CONFIG_NAMES, DATASET_NAMES, get_config

    contrastive = [c for c in CONFIG_NAMES if get_config(c, DATASET_NAMES[0]).is_contrastive]
    p = sub.add_parser("pretrain", help="contrastive pre-training of one configuration")
    common.add_data_choice(p)
    p.add_argument(
        "--config",
        required=True,
        help=f"a contrastive row of Table 1: {', '.join(contrastive)} (the supervised SCNN "
        "row runs in `reproduce`)",
    )
    common.add_seed(p, "seed")
    common.add_epochs(p, "epochs", shown="the configuration's, 30-60")
    common.add_hidden_channels(p, "encoder width", "the configuration's 64")
    common.add_edition_options(p)
    p.add_argument(
        "--set",
        nargs="+",
        default=(),
        metavar="FIELD=VALUE",
        help="change configuration fields, parsed as the field's type, e.g. temperature=0.5 "
        "'gamma=(0,1,1)' K=3 (sets K_down and K_up)",
    )
    p.add_argument(
        "--out",
        required=True,
        type=common.out_path,
        help="output folder: encoder.pt and pretrain.json are written there",
    )
    p.add_argument(
        "--dist-timeout",
        type=common.int_between(1, 86_400),
        default=600,
        metavar="SECONDS",
        help="under torchrun: how long a process waits for the others in a collective "
        "(rendezvous, gradient all-reduce, final barrier) before it fails instead of hanging "
        "(default: 600; at most a day)",
    )
    budgets.add_harmonic_budget(p, "the HodgeReadout")
    budgets.add_activation_budget(p)
    p.add_argument(
        "--flow-scale",
        choices=("rms", "none"),
        default="rms",
        help="rms (default): flows in physical units (an RMS of their non-zero entries "
        "outside 1/4..4) are divided by that RMS before the encoder, recorded in the "
        "checkpoint and applied by evaluate and embed; unit flows are left as they are; "
        "none: the flows as given",
    )
    common.add_overwrite(p, "is a non-empty folder")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Pre-train as ``args`` say; returns the exit status.

    Raises:
        ValueError: an unknown configuration or dataset, the supervised row, a bad ``--set``,
            a non-empty ``--out`` without ``--overwrite`` or an unwritable one (before any
            work); ``--out`` held by another run; a data file of many complexes under
            ``torchrun``.
        FileNotFoundError: the ``--data-file`` does not exist (a folder: ``ValueError``).
    """
    from topo_contrastive._utils.outputs import output_run
    from topo_contrastive._utils.words import count
    from topo_contrastive.cli._runs import PRETRAIN_OUTPUTS, pretrain_to_folder, process_group

    config, task = inputs.command_config(args, contrastive=True)
    with budgets.harmonic_budget(args), process_group(
        args.device, timeout=args.dist_timeout
    ) as group:
        lead = group.rank == 0
        if lead:
            common.check_out(args.out, args.overwrite, writable=True)
        data = inputs.load_data(args)  # bad data is refused before --out is made
        if data.scale_flows(args.flow_scale) != 1.0 and lead:
            common.say(f"flows divided by their RMS of {data.flow_rms:.4g} (physical units; "
                       "--flow-scale none keeps them)")  # fmt: skip
        caching = budgets.say_plans(args, data, config, loud=lead)
        epochs = args.epochs or config.epochs
        record = {"edition": common.edition(args)}
        if args.data_file is not None:
            record.update(data_file=str(Path(args.data_file)), tuned_for=task)
        quiet = argparse.Namespace(no_progress=True)
        bar = common.progress(args if lead else quiet, epochs,
                              f"pretrain {config.name} {data.name}", "epoch")  # fmt: skip
        # rank 0 holds --out (locked; with --overwrite the new run is written beside it and
        # swapped in when complete); the other ranks write nothing
        held = (
            output_run(args.out, overwrite=args.overwrite, owns=PRETRAIN_OUTPUTS,
                       reads=common.read_files(args))
            if lead
            else contextlib.nullcontext(Path(args.out))
        )
        with held as work:
            result = pretrain_to_folder(
                data, config, work, seed=args.seed, epochs=epochs, group=group, record=record,
                progress=_ticker(bar), caching=caching,
            )  # fmt: skip
        bar.close()
    if group.rank == 0:
        out = Path(args.out).expanduser().absolute()
        lines = [
            f"pretrained {config.name} on {data.name}{inputs.metric_words(data)} "
            f"({count(epochs, 'epoch')}, "
            f"{result.seconds:.1f} s, world size {result.world_size}, final loss "
            f"{result.losses[-1]:.4f}); wrote {out / 'encoder.pt'}",
            *(f"warning: {w}" for w in result.diagnostics.get("warnings", [])),
        ]
        common.say("\n".join(lines))
    return 0


def _ticker(bar: Any) -> Callable[[int, float], None]:
    """The per-epoch callback that advances ``bar`` and shows the epoch's loss."""

    def tick(epoch: int, loss: float) -> None:
        bar.set_postfix(loss=f"{loss:.4f}")
        bar.update(1)

    return tick
