"""Saving and loading pre-trained encoders of the experiments: the experiments' face of
:func:`topo_contrastive.io.save_encoder` / :func:`topo_contrastive.io.load_encoder`, which
hold the one implementation (file format, checks, atomic write). The names differ from
those of :mod:`topo_contrastive.io` because the arguments do (an :class:`ExperimentData`
and an :class:`ExperimentConfig` in place of a complex).

Here the complex is an :class:`ExperimentData`'s (its Hodge decomposition is reused at load),
and the dataset's and the configuration's names go into the metadata (``"dataset"``,
``"config"``) beside ``architecture`` and ``complex``; the file is :mod:`topo_contrastive.io`'s
``{"format": "topo_contrastive.encoder", "version": 1, "state_dict": ..., "metadata": ...}``.
"""

from __future__ import annotations

import os
from typing import Any

from topo_contrastive import io
from topo_contrastive.nn import SCNN
from topo_contrastive.training.configs import ExperimentConfig
from topo_contrastive.training.data import ExperimentData

__all__ = ["CHECKPOINT_FORMAT", "load_experiment_encoder", "save_experiment_encoder"]

CHECKPOINT_FORMAT = io.ENCODER_FORMAT


def save_experiment_encoder(
    encoder: SCNN,
    path: str | os.PathLike,
    data: ExperimentData,
    config: ExperimentConfig,
    **extra: Any,
) -> None:
    """Write ``encoder``'s weights and metadata to ``path`` atomically.

    :func:`topo_contrastive.io.save_encoder` with ``data``'s complex and the names of the
    dataset and the configuration in the metadata.

    Args:
        encoder: the trained SCNN.
        path: the checkpoint file (e.g. ``out/encoder.pt``).
        data: the dataset it was trained on (complex sizes and fingerprint are stored).
        config: its configuration (its name is stored).
        **extra: more JSON-like metadata (seed, epochs, losses, ...).

    Raises:
        TypeError, ValueError: see :func:`topo_contrastive.io.save_encoder`.
    """
    io.save_encoder(
        encoder, path, complex=data.complex, dataset=data.name, config=config.name, **extra
    )


def load_experiment_encoder(
    path: str | os.PathLike,
    data: ExperimentData | None = None,
    expected: dict[str, Any] | None = None,
) -> tuple[SCNN, dict[str, Any]]:
    """Load an encoder saved by :func:`save_experiment_encoder` (with ``weights_only=True``).

    :func:`topo_contrastive.io.load_encoder` on ``data``'s complex (its Hodge decomposition
    rebuilds a ``HodgeReadout``).

    Args:
        path: the checkpoint file.
        data: if given, the checkpoint's complex must be this dataset's complex (same sizes
            ``(N0, N1, N2)`` and fingerprint of its edges and triangles).
        expected: if given, architecture values the checkpoint must have (e.g.
            ``{"hidden_channels": 64}`` or a configuration's :meth:`ExperimentConfig.architecture`).

    Returns:
        ``(encoder, metadata)``; the encoder is in eval mode on the CPU.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: an unreadable or foreign file, a checkpoint of another complex, another
            width or architecture than ``expected``, weights that do not match the stored
            architecture or hold NaN/inf.
    """
    return io.load_encoder(path, complex=None if data is None else data.hodge, expected=expected)
