"""``topo-contrastive evaluate``: linear-probe evaluation of a saved encoder over several random
splits, with reference rows on the same splits (an untrained encoder of the same architecture
and seed, raw flows, |flows|, harmonic coordinates) and a line saying which of them beat the
encoder (:func:`~topo_contrastive.cli._runs.evaluate_saved`). The probe is the fast
ridge probe by default, the paper's linear SVM with ``--probe svm``."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from topo_contrastive.cli import _budgets as budgets
from topo_contrastive.cli import _common as common
from topo_contrastive.cli import _inputs as inputs

#: the options that add or leave out rows of the report
_ROW_FLAGS = {
    "--no-references": "probe the encoder alone, without the reference rows (untrained "
    "encoder, raw flows, |flows|, harmonic coordinates)",
    "--fine-tune": "add two rows on the same splits: the encoder fine-tuned end to end with a "
    "linear head (epochs chosen on the validation split, else by 3-fold CV inside the "
    "training split), and the same recipe from the untrained encoder (the control)",
    "--supervised": "add a row on the same splits: an SCNN of the checkpoint's architecture "
    "trained from scratch with a linear head on the training labels (the supervised SCNN's "
    "learning rate and at most its epochs, the epoch chosen on the validation split)",
}


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``evaluate`` subcommand and its options to ``sub``."""
    from topo_contrastive._names import DEFAULT_PROBE, PROBES
    from topo_contrastive.training.configs import EDITIONS

    p = sub.add_parser("evaluate", help="linear-probe evaluation of a saved encoder")
    common.add_checkpoint(p)
    common.add_data_choice(p)
    p.add_argument(
        "--probe",
        choices=PROBES,
        default=DEFAULT_PROBE,
        help="the linear probe of every row: ridge (default: standardised features, a ridge "
        "classifier whose penalty is chosen by the leave-one-out squared hinge loss on the "
        "training split, the whole penalty path from one factorisation per split; seconds "
        "where the SVM takes minutes) or svm "
        "(Table 1's protocol: LinearSVC, C by stratified 10-fold CV on the training split)",
    )
    p.add_argument(
        "--seeds",
        type=common.splits_int,
        default=16,
        help=f"number of random splits, at most {common.MAX_SPLITS:,} (default: 16)",
    )
    common.add_seed(p, "first split seed")
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
        type=common.positive_int,
        default=None,
        help="if given, the checkpoint's width must be this",
    )
    p.add_argument(
        "--out",
        default=None,
        type=common.out_path,
        help="write the per-split results to this JSON file (with a 'references' block) and "
        "the table of the rows to the Markdown file beside it (eval.json -> eval.md; a name "
        "ending in .md is refused)",
    )
    for flag, text in _ROW_FLAGS.items():
        p.add_argument(flag, action="store_true", help=text)
    budgets.add_harmonic_budget(p, "the harmonic reference row")
    common.add_overwrite(p, "exists")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Evaluate as ``args`` say (``--probe``: the probe of every row) and print the mean test
    accuracy, then (unless
    ``--no-references``) the splits and the selection rule, one line per reference row and one
    line saying which rows beat the encoder; returns the exit status.

    Raises:
        ValueError: an unknown configuration or dataset, an existing ``--out`` without
            ``--overwrite`` (or an existing Markdown report beside it), an ``--out`` ending in
            ``.md``, data without labels,
            or a checkpoint that does not match the data or the expected architecture; a split
            whose training part the probe cannot run on (one class, or a class with a single
            sample), before any fit.
        FileNotFoundError: the checkpoint or the ``--data-file`` does not exist (a folder:
            ``ValueError``).
    """
    from topo_contrastive.training.configs import get_config

    common.check_seed_range(args.seed, args.seeds)
    task = inputs.config_task(args)
    expected: dict[str, Any] = {}
    if args.config:
        expected.update(get_config(args.config, task, common.edition(args)).architecture())
    if args.hidden_channels:
        expected["hidden_channels"] = args.hidden_channels
    if args.out:
        common.check_json_out(args.out)
        common.check_file_out(args)
        if not args.no_references or args.fine_tune or args.supervised:
            from topo_contrastive.cli._runs import markdown_path

            md = markdown_path(Path(args.out).expanduser())
            if md.exists() and not args.overwrite:
                raise ValueError(
                    f"the Markdown report '{md}' beside --out already exists; pass --overwrite "
                    "to replace it, or choose another --out"
                )
    import torch
    from threadpoolctl import threadpool_limits

    # numpy's BLAS (the Hodge decomposition, the harmonic basis, the probes) on the torch
    # threads chosen for this run: OpenBLAS's default of every core spins against the other
    # processes of a busy machine
    with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
        with budgets.harmonic_budget(args):
            return _evaluate(args, task, expected)


def _evaluate(args: argparse.Namespace, task: str, expected: dict[str, Any]) -> int:
    """The work of :func:`run` once the options are checked."""
    from topo_contrastive import io
    from topo_contrastive._utils.files import require_file
    from topo_contrastive.cli._runs import evaluate_saved
    from topo_contrastive.evaluation.probe import check_probe_splits
    from topo_contrastive.evaluation.references import FINE_TUNE_ROWS, reference_names
    from topo_contrastive.training.configs import get_config
    from topo_contrastive.training.formatting import format_mean_std

    require_file(args.checkpoint, "checkpoint")
    data = inputs.load_data(args)
    data.require_labels("evaluate (the linear probe)")
    seeds = list(range(args.seed, args.seed + args.seeds))
    check_probe_splits(data, seeds, args.probe)  # before any fit
    encoder, meta = io.load_encoder(args.checkpoint, complex=data.hodge, expected=expected)
    data.input_scale = float(meta.get("input_scale", 1.0))  # the scale it was trained with
    name = meta.get("config", "?")

    supervised = None
    if args.supervised:  # the supervised configuration of the encoder's edition
        from topo_contrastive.nn import HodgeReadout

        edition = "hodge" if isinstance(encoder.readout, HodgeReadout) else "paper"
        supervised = get_config("SCNN", task, edition)
    refs = not args.no_references or args.fine_tune or args.supervised
    # one display for the whole evaluation: every row on every split is one step, so that the
    # steps done, the steps left and the expected time cover the reference rows too
    rows = 1 + (0 if args.no_references else len(reference_names(data))) + (
        len(FINE_TUNE_ROWS) if args.fine_tune else 0
    ) + (1 if args.supervised else 0)
    if not args.no_references and data.hodge is not None:
        try:
            budgets.say_harmonic(data.hodge)
        except ValueError:  # no room for one direction: the row is omitted, saying why
            pass
    bar = common.progress(args, rows * len(seeds), f"evaluate {name} {data.name}", "probe")

    def tick(result: dict[str, Any], row: str = "encoder") -> None:
        bar.set_postfix(row=row, test_acc=f"{100 * result['test_accuracy']:.1f}%")
        bar.update(1)

    held, out = contextlib.nullcontext(None), None
    if args.out:  # locked; the report, then the JSON (the marker), put in place when complete
        from topo_contrastive._utils.outputs import output_run
        from topo_contrastive.cli._runs import markdown_path

        out = Path(args.out).expanduser().absolute()
        files = [markdown_path(out), out] if refs else [out]  # the report only with rows
        held = output_run(out, files=files, overwrite=args.overwrite, reads=common.read_files(args))
    with held as work:
        summary = evaluate_saved(
            encoder, data, seeds, checkpoint=args.checkpoint, metadata=meta,
            device=args.device, out=None if work is None else work / out.name, progress=tick,
            references=not args.no_references,
            reference_progress=lambda row, result: tick(result, row), fine_tune=args.fine_tune,
            supervised=supervised, probe=args.probe,
        )  # fmt: skip
    bar.close()
    how = ("ridge probe, alpha by leave-one-out" if args.probe == "ridge"
           else "linear SVM, C by 10-fold CV")  # fmt: skip
    print(
        f"{name} on {data.name}{inputs.metric_words(data)}: test accuracy "
        f"{format_mean_std(summary['mean_accuracy'], summary['std_accuracy'])} % over "
        f"{len(seeds)} splits ({how})"
    )
    if refs:
        print(reference_report(summary["references"]))
    return 0


def reference_report(references: dict[str, Any]) -> str:
    """The printed part of the reference rows: the protocol line, one line per row (mean ±
    std over the splits, features), omitted rows with the reason, and the below line."""
    from topo_contrastive.evaluation.references import protocol_line
    from topo_contrastive.training.formatting import format_mean_std

    lines = [f"Same splits, same probe: {protocol_line(references['protocol'])}."]
    width = max(len(r["label"]) for r in references["rows"])
    for r in references["rows"]:
        lines.append(
            f"  {r['label']:<{width}}  "
            f"{format_mean_std(r['mean_accuracy'], r['std_accuracy'], widths=(5, 4))} %"
            f"  ({r['features']} features)"
        )
    for row, why in references["omitted"].items():
        lines.append(f"  {row}: omitted ({why})")
    for key in ("fine_tune", "supervised"):
        if references.get(key):
            lines.append(references[key][0].upper() + references[key][1:] + ".")
    line = references["line"]
    lines.append(line[0].upper() + line[1:] + ".")
    return "\n".join(lines)
