"""What a command reads: its configuration (``--config`` of the task, in the edition, with
``--hidden-channels``, ``--readout`` and ``--set``) and its data (``--dataset`` or
``--data-file``, one complex or many).

Imports neither torch nor numpy at import time: the library is imported inside the functions.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from topo_contrastive.cli._common import edition, edition_overrides


def config_task(args: argparse.Namespace) -> str:
    """The task whose configurations apply (``--dataset``, else ``--tuned-for``), validated
    before any work.

    Raises:
        ValueError: an unknown ``--dataset``.
        FileNotFoundError: the ``--data-file`` does not exist (a folder: ``ValueError``).
    """
    from topo_contrastive.training.configs import resolve_dataset_name

    if args.data_file is None:
        return resolve_dataset_name(args.dataset)
    from topo_contrastive._utils.files import require_file

    require_file(args.data_file, "data file")
    return args.tuned_for


def command_config(args: argparse.Namespace, contrastive: bool = False) -> tuple[Any, str]:
    """The configuration a command runs and its task: ``--config`` of the task
    (:func:`config_task`) in the edition (:func:`edition`), with ``--hidden-channels``,
    ``--readout`` and ``--set`` applied.

    Args:
        args: the parsed options.
        contrastive: refuse the supervised row (``pretrain``).

    Raises:
        ValueError: as :func:`config_task`; an unknown configuration, a bad ``--set``
            (:func:`~topo_contrastive.training.fields.set_fields`); with ``contrastive``, the
            supervised baseline.
        FileNotFoundError: as :func:`config_task`.
    """
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.fields import set_fields

    overrides = dict(edition_overrides(args))
    if getattr(args, "hidden_channels", None):
        overrides["hidden_channels"] = args.hidden_channels
    chosen = edition(args)
    task = config_task(args)
    config = get_config(args.config, task, chosen, **overrides)
    config = set_fields(config, getattr(args, "set", ()))
    if contrastive and not config.is_contrastive:
        raise ValueError(
            f"`pretrain` needs a contrastive configuration; {config.name!r} is the supervised "
            "baseline (run it with `reproduce --configs SCNN`)"
        )
    return config, task


def load(args: argparse.Namespace, name: str) -> Any:
    """The :class:`~topo_contrastive.training.ExperimentData` of the paper's dataset
    ``name`` (a resolved name), built as the data options say."""
    from topo_contrastive.training.data import ExperimentData, load_dataset

    ds = load_dataset(
        name,
        data_root=args.data_root,
        ocean_raw=args.ocean_raw,
        trajectory_points=args.trajectory_points,
        trajectory_split=args.trajectory_split,
    )
    return ExperimentData.from_dataset(ds, name)


#: The commands that read a ``--data-file`` of many complexes (several rows of
#: ``cell_counts``, :class:`~topo_contrastive.datasets.EdgeFlows`).
MANY_COMPLEX_COMMANDS = ("pretrain", "evaluate", "embed")


def refuse_many_file(args: argparse.Namespace, path: str | os.PathLike) -> None:
    """Refuse, naming the command, a ``--data-file`` of many complexes given to a command
    that reads one complex per file.

    Raises:
        ValueError: ``path`` has the many-complex layout and the command is not one of
            :data:`MANY_COMPLEX_COMMANDS`.
    """
    from topo_contrastive.datasets._file import complexes_in

    command = getattr(args, "command", None)
    if command not in MANY_COMPLEX_COMMANDS and complexes_in(path) > 1:
        raise ValueError(
            f"`{command}` reads one complex per --data-file, but '{path}' holds many complexes "
            f"(several rows of its key 'cell_counts'); {', '.join(MANY_COMPLEX_COMMANDS)} "
            "read those"
        )


def metric_words(data: Any) -> str:
    """``", in the <metric> metric (<which> weights)"`` for data on a weighted complex (the
    commands' one-line summaries; docs/weights.md), ``""`` on an unweighted one."""
    ops = getattr(data, "complex", None)
    if ops is None or ops.metric == "unweighted":
        return ""
    which = [n for k, n in enumerate(("node", "edge", "cell")) if (ops.hodge_star(k) != 1).any()]
    return f", in the {ops.metric} metric ({'/'.join(which)} weights)"


def load_data(args: argparse.Namespace) -> Any:
    """The :class:`~topo_contrastive.training.ExperimentData` of ``--dataset`` or
    ``--data-file`` (named by its stem; one complex, or many in the commands of
    :data:`MANY_COMPLEX_COMMANDS`, refused, naming the command, in the others)."""
    from topo_contrastive.training.configs import resolve_dataset_name

    if args.data_file is None:
        return load(args, resolve_dataset_name(args.dataset))
    from topo_contrastive.training.data import ExperimentData, load_data_file

    refuse_many_file(args, args.data_file)
    ds = load_data_file(args.data_file, data_root=args.data_root)
    return ExperimentData.from_dataset(ds, Path(args.data_file).stem)
