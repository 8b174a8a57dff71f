"""``topo-contrastive embed``: the embeddings of every sample by a saved encoder, as ``.npz``
and ``.csv`` (:func:`~topo_contrastive.experiments.runs.embed_to_folder`)."""

from __future__ import annotations

import argparse

from topo_contrastive.cli import _common as common


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``embed`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "embed", help="embeddings of every sample by a saved encoder (.npz and .csv)"
    )
    p.add_argument("--checkpoint", required=True, help="encoder.pt written by `pretrain`")
    common.add_data_choice(p, configured=False)
    p.add_argument(
        "--out",
        required=True,
        help="output folder: embeddings.npz, embeddings.csv and embeddings.json are written there",
    )
    p.add_argument(
        "--batch-size",
        type=common.positive_int,
        default=256,
        help="samples per forward (default: 256)",
    )
    common.add_overwrite(p, "is a non-empty folder")
    common.add_run_options(p)
    common.add_data_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Embed as ``args`` say; returns the exit status.

    Raises:
        ValueError: an unknown dataset, an unwritable ``--out``, a non-empty ``--out`` without
            ``--overwrite`` (an earlier run is kept, as for ``pretrain`` and ``reproduce``),
            or a checkpoint that does not match the data.
        FileNotFoundError: the ``--data-file`` or the checkpoint does not exist (a folder:
            ``ValueError``).
    """
    from topo_contrastive._files import check_output_dir, check_output_possible, require_file
    from topo_contrastive.experiments.runs import embed_to_folder

    if args.data_file is not None:
        require_file(args.data_file, "data file")
    require_file(args.checkpoint, "checkpoint")
    common.check_out(args.out, args.overwrite)
    check_output_possible(args.out)
    data = common.load_data(args)  # bad data is refused before --out is made
    out = check_output_dir(args.out)
    done = embed_to_folder(
        args.checkpoint, data, out, device=args.device, batch_size=args.batch_size,
        data_file=args.data_file,
    )  # fmt: skip
    samples, dims = done.shape
    common.say(
        f"embedded {samples} samples of {data.name} into {dims} dimensions "
        f"({done.encoder.get('config', '?')} encoder); wrote {done.paths['npz']} and "
        f"{done.paths['csv']}"
    )
    return 0
