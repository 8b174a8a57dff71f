"""The runs behind the ``topo-contrastive`` commands, callable from Python as well.

- :func:`process_group`: the ``torch.distributed`` set-up of a pre-training run under
  ``torchrun`` (nothing on a single process).
- :func:`pretrain_to_folder`: pre-train one configuration and write ``encoder.pt``,
  ``pretrain.json`` and, last, the marker ``COMPLETE`` into a folder (rank 0 alone writes);
  :func:`require_contrastive` checks its configuration before any work.
- :func:`evaluate_saved`: the linear-SVM evaluation of a loaded encoder over several splits,
  with reference rows on the same splits, summarised and optionally written as JSON and
  Markdown (:func:`markdown_path`).
- :func:`embed_to_folder`: the embeddings of every sample by a saved encoder (``.npz``,
  ``.csv`` and ``.json``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from topo_contrastive import io
from topo_contrastive._utils.files import (
    COMPLETE_MARKER,
    begin_outputs,
    mark_complete,
    write_json,
    write_text,
)
from topo_contrastive.evaluation.probe import DEFAULT_PROBE, check_probe_splits, evaluate_encoder
from topo_contrastive.evaluation.references import (
    reference_rows,
    references_markdown,
)
from topo_contrastive.training import loop as training
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData
from topo_contrastive.training.diagnostics import common_share, pretrain_diagnostics
from topo_contrastive.training.embeddings import write_embeddings


@dataclasses.dataclass(frozen=True)
class ProcessGroup:
    """Where this process trains, as set up by :func:`process_group`.

    Attributes:
        device: the training device (under ``torchrun`` on CUDA: ``cuda:LOCAL_RANK``).
        rank: this process's rank (0 on a single process).
        world_size: the number of processes (1 on a single process).
    """

    device: torch.device
    rank: int
    world_size: int

    @property
    def distributed(self) -> bool:
        """Whether more than one process trains."""
        return self.world_size > 1


@contextmanager
def process_group(device: str | torch.device, timeout: float = 600) -> Iterator[ProcessGroup]:
    """The process group of a pre-training run: under ``torchrun`` (``WORLD_SIZE > 1``) the
    ``torch.distributed`` group is initialised if it is not yet (NCCL on CUDA, each process
    on ``cuda:LOCAL_RANK``; else gloo), all processes meet at a barrier when the block ends
    normally, and the group is destroyed in any case. On a single process nothing is set up.

    Args:
        device: the training device (``cpu``, ``cuda``, ``cuda:N`` or ``auto``).
        timeout: seconds a process waits for the others in a collective (rendezvous,
            gradient all-reduce, the final barrier) before it fails instead of hanging
            (default: 600).

    Raises:
        ValueError: an unknown device, or CUDA asked for but not available.
    """
    dev = training.resolve_device(device)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    distributed = world > 1
    if distributed and not dist.is_initialized():
        if dev.type == "cuda":
            dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(dev)
        dist.init_process_group(
            backend="nccl" if dev.type == "cuda" else "gloo",
            timeout=timedelta(seconds=timeout),
        )
    rank = dist.get_rank() if distributed else 0
    try:
        yield ProcessGroup(device=dev, rank=rank, world_size=world)
        if distributed:
            dist.barrier()
    finally:
        if distributed and dist.is_initialized():
            dist.destroy_process_group()


#: The entries :func:`pretrain_to_folder` writes into its folder (an ``--overwrite`` removes an
#: earlier run's and keeps other files).
PRETRAIN_OUTPUTS = ("encoder.pt", "pretrain.json", COMPLETE_MARKER)
#: The entries :func:`embed_to_folder` writes into its folder.
EMBED_OUTPUTS = ("embeddings.npz", "embeddings.csv", "embeddings.json", COMPLETE_MARKER)


def require_contrastive(config: ExperimentConfig) -> ExperimentConfig:
    """``config``, checked to be a contrastive row (the ones :func:`pretrain_to_folder` runs).

    Raises:
        ValueError: ``config`` is the supervised baseline.
    """
    if not config.is_contrastive:
        raise ValueError(
            f"`pretrain` needs a contrastive configuration; {config.name!r} is the supervised "
            "baseline (run it with `reproduce --configs SCNN`)"
        )
    return config


def pretrain_to_folder(
    data: ExperimentData,
    config: ExperimentConfig,
    out: str | os.PathLike,
    seed: int = 0,
    epochs: int | None = None,
    group: ProcessGroup | None = None,
    record: Mapping[str, Any] | None = None,
    progress: Callable[[int, float], None] | None = None,
    caching: tuple[int, int] | None = None,
) -> training.PretrainResult:
    """Pre-train ``config`` on ``data`` and write the run into the folder ``out``.

    Before training, a stale marker ``COMPLETE`` and the previous ``encoder.pt`` are removed
    and ``pretrain.json`` is written with ``"complete": false``; after it, ``encoder.pt``
    (weights only, atomically), ``pretrain.json`` with ``"complete": true``, the losses and
    the wall time, and, last, the marker ``COMPLETE``. Under ``torchrun`` rank 0 alone writes.
    ``pretrain.json`` records every setting (the configuration's fields, with ``epochs`` the
    number that ran, seed, torch threads, library version, what
    :meth:`~topo_contrastive.training.ExperimentData.record` says of the data) and the run's
    :func:`~topo_contrastive.training.diagnostics.pretrain_diagnostics` (loss against
    chance, embedding spread, warnings), which are also in the result's ``diagnostics``.

    Args:
        data: the prepared dataset (one complex, or samples on complexes of their own).
        config: a contrastive configuration.
        out: an existing, writable folder
            (:func:`~topo_contrastive._utils.files.check_output_dir`).
        seed: the pre-training seed (default: 0).
        epochs: epochs (default ``None``: the configuration's).
        group: the process group of :func:`process_group` (default ``None``: a single
            process on the CPU).
        record: more entries of ``pretrain.json`` (e.g. the data file it was read from).
        progress: called with ``(epoch, loss)`` after every epoch.
        caching: the gradient caching of a step, views per chunk and kept chunks (default
            ``None``: the whole batch; see :func:`~topo_contrastive.training.loop.pretrain`).

    Returns:
        The :class:`~topo_contrastive.training.loop.PretrainResult` of the run.

    Raises:
        ValueError: ``config`` is the supervised baseline.
    """
    require_contrastive(config)
    group = group or ProcessGroup(device=torch.device("cpu"), rank=0, world_size=1)
    out, epochs = Path(out), epochs or config.epochs
    # the configuration recorded (pretrain.json, encoder.pt) is the one that ran: its epochs
    # are the run's, never the preset's beside them
    config = config.replace(epochs=epochs) if epochs != config.epochs else config
    from topo_contrastive import __version__

    log: dict[str, Any] = {"dataset": data.name, "config": config.to_dict(), **data.record(),
                           "input_scale": data.input_scale}  # fmt: skip
    chunk, kept = caching if caching is not None else (None, 1)
    log.update(threads=torch.get_num_threads(), version=__version__)
    log.update(chunk_samples=chunk, kept_chunks=kept if chunk is not None else None)
    log.update(record or {})
    if group.rank == 0:  # from here on the folder says the run is not complete
        begin_outputs(out / COMPLETE_MARKER, stale=[out / "encoder.pt"])
        started = {"seed": seed, "epochs": epochs, "world_size": group.world_size}
        write_json(out / "pretrain.json", {"complete": False, **log, **started})
    result = training.pretrain(
        data, config, seed=seed, epochs=epochs, device=group.device, progress=progress,
        chunk_samples=chunk, kept_chunks=kept,
    )  # fmt: skip
    if group.rank == 0:
        meta = {
            "seed": seed,
            "epochs": epochs,
            "world_size": result.world_size,
            "final_loss": result.losses[-1],
        }
        h = training.embed(result.encoder, data, device=group.device)
        result.diagnostics = pretrain_diagnostics(result.losses, result.chance_losses, h,
                                                  flow_rms=data.flow_rms * data.input_scale,
                                                  common_share=None if data.flows is None
                                                  else common_share(data.flows))
        meta["diagnostics"] = result.diagnostics
        layout = {k: v for k, v in data.record().items() if k == "data_layout"}
        io.save_encoder(result.encoder, out / "encoder.pt", complex=data.complex,
                        dataset=data.name, config=config.name, input_scale=data.input_scale,
                        **layout, **meta)  # fmt: skip
        write_json(
            out / "pretrain.json",
            {
                "complete": True,
                **log,
                "seconds": result.seconds,
                "losses": result.losses,
                "written_by_rank": group.rank,
                **meta,
            },
        )
        mark_complete(out / COMPLETE_MARKER, f"pretrained in {result.seconds:.1f} s")
    return result


def evaluate_saved(
    encoder: torch.nn.Module,
    data: ExperimentData,
    split_seeds: Sequence[int],
    checkpoint: str | os.PathLike | None = None,
    metadata: Mapping[str, Any] | None = None,
    device: str | torch.device = "cpu",
    out: str | os.PathLike | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    references: bool = True,
    reference_progress: Callable[[str, dict[str, Any]], None] | None = None,
    fine_tune: bool = False,
    supervised: ExperimentConfig | None = None,
    probe: str = DEFAULT_PROBE,
) -> dict[str, Any]:
    """Linear evaluation of a saved encoder on several random splits, summarised, with
    reference rows probed on the same splits by the same rule
    (:func:`~topo_contrastive.evaluation.references.reference_rows`: an untrained encoder of
    the same architecture and seed, the raw flows, their magnitudes and the harmonic
    coordinates).

    Args:
        encoder: the encoder (e.g. from
            :func:`~topo_contrastive.training.checkpoint.load_experiment_encoder`).
        data: the prepared dataset, with labels.
        split_seeds: the seeds of the random splits.
        checkpoint: the file the encoder was read from, named in the summary.
        metadata: the checkpoint's metadata, kept in the summary.
        device: the device of the forward passes.
        out: if given, the summary is written to this JSON file (atomically) and, with
            ``references``, the Markdown table beside it (:func:`markdown_path`, atomically).
            An earlier JSON and report there are removed before the work, the report is
            written first and the JSON last: the JSON is the completeness marker (a killed
            run leaves no JSON, never a JSON beside another run's report).
        progress: called with each of the encoder's split results as soon as it is done.
        references: probe the reference rows too (default: ``True``); the untrained row
            starts from ``metadata["seed"]`` (the pre-training seed; 0 when absent).
        reference_progress: called as ``reference_progress(row, split_result)`` after every
            split of every reference row (default: nothing).
        fine_tune: add the fine-tuned and fine-tune control rows on the same splits
            (:func:`~topo_contrastive.evaluation.references.fine_tune_rows`; default
            ``False``); with ``references=False`` the block holds the encoder and these rows.
        supervised: add the supervised SCNN of the encoder's architecture trained with this
            configuration on the same splits
            (:func:`~topo_contrastive.evaluation.references.supervised_row`; default
            ``None``: no such row).
        probe: the linear probe of the encoder and of every reference row: ``"ridge"``
            (default: the fast probe,
            :func:`~topo_contrastive.evaluation.ridge_probe.ridge_probe`) or ``"svm"`` (the
            paper's protocol, :func:`~topo_contrastive.evaluation.linear_probe`).

    Returns:
        ``{"checkpoint", "dataset", "metadata", "probe", "mean_accuracy", "std_accuracy",
        "splits"}``:
        the test accuracies' mean and standard deviation in percent, and one dict per split;
        with ``references`` also ``"references"``: the dict of
        :func:`~topo_contrastive.evaluation.references.reference_rows` (``protocol``,
        ``rows`` with per-split accuracies and mean/std, ``omitted``, ``below``, ``line``).

    Raises:
        ValueError: ``data`` has no labels; an unknown ``probe``, or splits it cannot run on
            (checked before any output is touched and before any fit).
    """
    data.require_labels("evaluate (the linear probe)")
    check_probe_splits(data, list(split_seeds), probe)
    report = (references or fine_tune or supervised is not None) and out is not None
    if out is not None:  # the JSON is the marker: written last, an earlier one goes first
        begin_outputs(out, stale=[markdown_path(out)] if report else [])
    results = evaluate_encoder(
        encoder, data, list(split_seeds), device=device, progress=progress, probe=probe
    )
    acc = 100 * np.array([r["test_accuracy"] for r in results])
    summary = {
        "checkpoint": None if checkpoint is None else str(checkpoint),
        "dataset": data.name,
        "metadata": dict(metadata or {}),
        "probe": probe,
        "mean_accuracy": float(acc.mean()),
        "std_accuracy": float(acc.std()),
        "splits": results,
    }
    if references or fine_tune or supervised is not None:
        seed = int((metadata or {}).get("seed") or 0)
        summary["references"] = reference_rows(
            encoder, data, list(split_seeds), results, seed=seed, device=device,
            progress=reference_progress, rows=None if references else (),
            fine_tune=fine_tune, supervised=supervised, probe=probe,
        )  # fmt: skip
    if out is not None:  # a killed run leaves no JSON, never the JSON of another report
        if report:
            write_text(markdown_path(out), references_markdown(summary))
        write_json(out, summary)
    return summary


def markdown_path(out: str | os.PathLike) -> Path:
    """The Markdown report beside the JSON file ``out`` (``eval.json`` -> ``eval.md``; a
    name ending in ``.md`` gets ``.md`` appended)."""
    out = Path(out)
    return out.with_suffix(".md") if out.suffix != ".md" else out.with_name(out.name + ".md")


@dataclasses.dataclass(frozen=True)
class EmbedOutputs:
    """What :func:`embed_to_folder` wrote.

    Attributes:
        paths: ``{"npz", "csv", "json"}``: the files written.
        shape: ``(S, D)``: samples and embedding dimensions.
        encoder: the checkpoint's metadata.
    """

    paths: dict[str, Path]
    shape: tuple[int, int]
    encoder: dict[str, Any]


def embed_to_folder(
    checkpoint: str | os.PathLike,
    data: ExperimentData,
    out: str | os.PathLike,
    device: str | torch.device = "cpu",
    batch_size: int | None = None,
    data_file: str | os.PathLike | None = None,
) -> EmbedOutputs:
    """The embeddings ``[S, D]`` of every sample of ``data`` by the encoder saved in
    ``checkpoint``, written into the folder ``out``
    (:func:`~topo_contrastive.training.embeddings.write_embeddings`).

    Args:
        checkpoint: an ``encoder.pt`` written by :func:`pretrain_to_folder`.
        data: the prepared dataset (labels optional).
        out: an existing, writable folder.
        device: the device of the forward passes.
        batch_size: samples per forward pass (default ``None``: as
            :func:`~topo_contrastive.training.embed` chooses by the complex's size).
        data_file: the edge-flow file ``data`` was read from, named in the metadata.

    Returns:
        The files written, the embeddings' shape and the checkpoint's metadata.

    Raises:
        ValueError: the checkpoint does not fit ``data`` (another complex; a readout tied to
            one complex on samples with complexes of their own), or is no encoder file.
    """
    encoder, meta = io.load_encoder(checkpoint, complex=data.hodge)
    data.input_scale = float(meta.get("input_scale", 1.0))  # the scale it was trained with
    emb = training.embed(encoder, data, device=device, batch_size=batch_size)  # [S, D]
    paths = write_embeddings(
        out,
        emb,
        sample_ids=getattr(data.dataset, "sample_ids", None),
        labels=data.original_labels(),
        metadata={
            "checkpoint": str(checkpoint),
            "dataset": data.name,
            "data_file": None if data_file is None else str(data_file),
            **data.record(),
            "encoder": meta,
        },
    )
    return EmbedOutputs(paths=paths, shape=(emb.shape[0], emb.shape[1]), encoder=meta)
