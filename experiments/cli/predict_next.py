"""``python -m experiments predict-next``: next-node trajectory prediction with a saved encoder
(frozen and fine-tuned, each with a :class:`~experiments.studies.next_node.NextNodeHead`)
beside the same SCNN from scratch, a first-order Markov chain and a uniform choice, on the
same splits (:func:`~experiments.studies.next_node.next_node_rows`)."""

from __future__ import annotations

import argparse
from typing import Any

from experiments import _helpers as h
from experiments.cli import _options


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``predict-next`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "predict-next",
        help="next-node trajectory prediction from a saved encoder (reuse), with baselines",
    )
    h.add_checkpoint(p)
    h.add_data_choice(p, configured=False)
    p.add_argument(
        "--seeds", type=h.splits_int, default=5,
        help="seeds: each cuts the paths, picks the split and initialises the heads (at most "
        f"{h.MAX_SPLITS:,}; default: 5)",
    )  # fmt: skip
    p.add_argument("--seed", type=h.seed_int, default=0,
                   help="first seed, at most 2**31 - 1 (default: 0)")
    h.add_epochs(
        p, "head training epochs (the epoch with the best validation accuracy is kept)", 100
    )
    p.add_argument(
        "--fraction", type=float, default=1.0,
        help="labelled fraction of the training and validation prefixes, in (0, 1] (label "
        "efficiency of the reuse; round(fraction x size) of them; a fraction that labels no "
        "training prefix is refused; a validation part under 5 prefixes is dropped and the "
        "last epoch kept; the table says the share really labelled; default: 1)",
    )  # fmt: skip
    p.add_argument(
        "--no-truncate", action="store_true",
        help="keep whole paths (default: cut each at a random length, as SCoNe does)",
    )  # fmt: skip
    p.add_argument(
        "--scone", action="store_true",
        help="add TopoModelX's SCoNe (3 layers x 16) trained from scratch as a row, also under "
        "--transfer (needs the topomodelx extra; refused before any training without it)",
    )  # fmt: skip
    p.add_argument(
        "--transfer", action="store_true",
        help="SCoNe's generalisation tests as well: every row also scored on the reversed test "
        "paths and, trained on the class-0 paths only, on the class-1 test paths (another "
        "region)",
    )  # fmt: skip
    p.add_argument(
        "--out", default=None, type=h.out_path,
        help="write the rows to this JSON file and a Markdown table beside it (pn.json -> "
        "pn.md; a name ending in .md is refused)",
    )  # fmt: skip
    h.add_overwrite(p, "exists")
    _options.add_run_options(p)
    _options.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Train and score every row as ``args`` say, print the table; returns the exit status.

    Raises:
        ValueError: data without node paths, a checkpoint of another complex, an existing
            ``--out`` without ``--overwrite``, an ``--out`` ending in ``.md``, a
            ``--fraction`` that labels no training prefix, a split without test paths (a
            data file without labels or split masks).
        FileNotFoundError: the checkpoint or the ``--data-file`` does not exist.
    """

    import math
    from functools import partial

    from experiments.studies.next_node.report import rows_markdown, transfer_markdown
    from experiments.studies.next_node.rows import ROWS, next_node_rows, require_paths
    from topo_contrastive import io

    if not (math.isfinite(args.fraction) and 0.0 < args.fraction <= 1.0):
        raise ValueError(f"--fraction must be in (0, 1], got {args.fraction}")
    h.check_seed_range(args.seed, args.seeds)
    if args.fraction < 1.0 and args.transfer:
        raise ValueError("--fraction is not part of --transfer: the generalisation tests use "
                         "every labelled prefix")  # fmt: skip
    if args.scone:
        from experiments.studies.next_node.scone import scone_available

        if not scone_available():
            raise ValueError(
                "--scone needs TopoModelX: pip install --no-deps topomodelx==0.0.1 (without "
                "its dependencies, into this environment; see docs/install.md)"
            )
    if args.data_file is not None:
        h.require_file(args.data_file, "data file")
        h.refuse_many_file(args, args.data_file)
    h.require_file(args.checkpoint, "checkpoint")
    if args.out:  # not over a file, in a folder made and written to before any work
        h.check_json_out(args.out)
        h.check_file_out(args)
    data = h.load_data(args)
    require_paths(data)  # before the checkpoint: data without paths say so first
    seeds = list(range(args.seed, args.seed + args.seeds))
    _check_splits(args, data, seeds)
    encoder, meta = io.load_encoder(args.checkpoint, complex=data.hodge)
    from experiments.studies.next_node.transfer import TESTS, next_node_transfer

    cells = (len(seeds) * (len(ROWS) + int(args.scone))
             * (len(TESTS) if args.transfer else 1))  # fmt: skip
    bar = h.progress(not args.no_progress, cells, f"predict-next {data.name}")

    def tick(*where: Any) -> None:  # (test,) row, seed, accuracy
        bar.set_postfix(row="/".join(map(str, where[-3::-1])), seed=where[-2],
                        test_acc=f"{100 * where[-1]:.1f}%")  # fmt: skip
        bar.update(1)

    run_ = next_node_transfer if args.transfer else partial(next_node_rows, fraction=args.fraction)
    summary: dict[str, Any] = run_(encoder, data, seeds, epochs=args.epochs, progress=tick,
                                   truncate=not args.no_truncate, device=args.device,
                                   scone=args.scone)  # fmt: skip
    bar.close()
    summary.update(checkpoint=str(args.checkpoint), dataset=data.name, metadata=meta)
    name = meta.get("config", "encoder")
    if args.transfer:
        lines = transfer_markdown(summary, data.name, name, args.epochs, len(seeds))
    else:
        lines = rows_markdown(summary, data.name, name, args.epochs, args.fraction)
    return _emit(args, lines, summary)


def _check_splits(args: argparse.Namespace, data: Any, seeds: list[int]) -> None:
    """Every seed's split has test paths, and ``--fraction`` labels at least one training
    prefix of it (it keeps ``round(fraction * size)`` of them); checked before any training.

    Raises:
        ValueError: naming the data (``--data-file`` or ``--dataset``) and the split's sizes,
            or ``--fraction``, the size and the valid range.
    """
    from experiments.studies.next_node.rows import next_node_split

    source = (f"--data-file '{args.data_file}'" if args.data_file is not None
              else f"--dataset {data.name}")  # fmt: skip
    for s in seeds:
        split = next_node_split(data, s)
        n = int(split["train"].size)
        if split["test"].size == 0 or n == 0:
            why = ("; a file without labels or train_mask / val_mask / test_mask puts every "
                   "path in training: add labels or the masks to it"
                   if data.labels is None else "")  # fmt: skip
            raise ValueError(
                f"{source} gives no {'test' if n else 'training'} paths for seed {s} (its "
                f"split: {n} training, {split['val'].size} validation, {split['test'].size} "
                f"test paths){why}"
            )
        if round(args.fraction * n) < 1:
            raise ValueError(
                f"--fraction {args.fraction:g} labels round({args.fraction:g} x {n}) = 0 of "
                f"the {n} training prefixes of seed {s}: expected a fraction above "
                f"{0.5 / n:g} and at most 1 (at least one labelled prefix)"
            )


def _emit(args: argparse.Namespace, lines: list[str], summary: dict[str, Any]) -> int:
    """Print the table ``lines``; with ``--out`` write it as Markdown beside the JSON summary
    (the JSON last: it marks a finished run). Returns the exit status 0."""
    from pathlib import Path

    table = "\n".join(lines) + "\n"
    if args.out:  # locked; the table, then the JSON (the marker), put in place when both are
        out = Path(args.out).expanduser().absolute()
        md = h.markdown_path(out)
        held = h.output_run(out, files=[md, out], overwrite=args.overwrite,
                            reads=h.read_files(args))
        with held as work:
            h.write_text(work / md.name, table)
            h.write_json(work / out.name, summary)
    print(table, end="")
    return 0
