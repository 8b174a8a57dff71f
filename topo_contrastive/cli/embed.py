"""``topo-contrastive embed``: the embeddings of every sample by a saved encoder, as ``.npz``
and ``.csv`` (:func:`~topo_contrastive.cli._runs.embed_to_folder`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from topo_contrastive.cli import _common as common
from topo_contrastive.cli import _inputs as inputs


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``embed`` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "embed", help="embeddings of every sample by a saved encoder (.npz and .csv)"
    )
    common.add_checkpoint(p)
    common.add_data_choice(p, configured=False)
    p.add_argument(
        "--out",
        required=True,
        type=common.out_path,
        help="output folder: embeddings.npz, embeddings.csv and embeddings.json are written there",
    )
    p.add_argument(
        "--batch-size",
        type=common.int_between(1, 1_000_000),
        default=None,
        help="samples per forward, at most 1,000,000 (default: 200 on one complex, fewer on "
        "a large one so that a forward holds at most 2^19 edge rows; 256 complexes of a "
        "many-complex file)",
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
    from topo_contrastive import io
    from topo_contrastive._utils.files import require_file
    from topo_contrastive._utils.outputs import output_run
    from topo_contrastive.cli._runs import EMBED_OUTPUTS, embed_to_folder

    if args.data_file is not None:
        require_file(args.data_file, "data file")
    require_file(args.checkpoint, "checkpoint")
    common.check_out(args.out, args.overwrite, writable=True)
    data = inputs.load_data(args)  # bad data is refused before --out is made
    encoder, _ = io.load_encoder(args.checkpoint, complex=data.hodge)  # other data refused
    readout = encoder.readout
    kind = getattr(readout, "harmonic", "none")  # a HodgeReadout's harmonic features
    if kind == "exact":
        common.say(f"harmonic features: exact basis (beta_1 = {readout.beta1}), as recorded "
                   "in the checkpoint")  # fmt: skip
    elif kind == "sketch":
        common.say(f"harmonic features: sketch of k = {readout.harmonic_dim} directions "
                   f"(beta_1 = {readout.beta1}), as recorded in the checkpoint")  # fmt: skip
    held = output_run(args.out, overwrite=args.overwrite, owns=EMBED_OUTPUTS,
                      reads=common.read_files(args))
    with held as work:
        done = embed_to_folder(
            args.checkpoint, data, work, device=args.device, batch_size=args.batch_size,
            data_file=args.data_file,
        )  # fmt: skip
    out = Path(args.out).expanduser().absolute()
    samples, dims = done.shape
    common.say(
        f"embedded {samples} samples of {data.name}{inputs.metric_words(data)} into {dims} "
        "dimensions "
        f"({done.encoder.get('config', '?')} encoder); wrote {out / done.paths['npz'].name} and "
        f"{out / done.paths['csv'].name}"
    )
    return 0
