"""Saving and loading pre-trained encoders: weights only, with the metadata to check them.

A checkpoint is a plain ``dict`` of tensors, numbers and strings (it loads with
``torch.load(path, weights_only=True)``, no pickled classes)::

    {"format": "topo_contrastive.encoder", "version": 1,
     "state_dict": {...SCNN weights...},
     "metadata": {"architecture": {...}, "complex": {"sizes": [N0, N1, N2],
                  "fingerprint": "..."}, "dataset": ..., "config": ..., "seed": ..., ...}}

It is written atomically (temporary file + ``os.replace``), so an interrupted save never
leaves a truncated ``encoder.pt``.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from topo_contrastive.datasets._base import atomic_torch_save
from topo_contrastive.experiments.configs import ExperimentConfig
from topo_contrastive.experiments.data import ExperimentData
from topo_contrastive.nn import SCNN, HodgeReadout

__all__ = ["CHECKPOINT_FORMAT", "load_encoder", "save_encoder"]

CHECKPOINT_FORMAT = "topo_contrastive.encoder"
_VERSION = 1
_ARCH_KEYS = ("num_layers", "K_down", "K_up", "hidden_channels", "act", "readout", "normalize")


def save_encoder(
    encoder: SCNN,
    path: str | os.PathLike,
    data: ExperimentData,
    config: ExperimentConfig,
    **extra: Any,
) -> None:
    """Write ``encoder``'s weights and metadata to ``path`` atomically.

    Args:
        encoder: the trained SCNN.
        path: the checkpoint file (e.g. ``out/encoder.pt``).
        data: the dataset it was trained on (complex sizes and fingerprint are stored).
        config: its configuration (name and architecture are stored).
        **extra: more JSON-like metadata (seed, epochs, losses, ...).

    Raises:
        ValueError: a weight holds NaN or inf values (nothing is written).
    """
    nonfinite = _nonfinite_weights(encoder.state_dict())
    if nonfinite:
        raise ValueError(
            f"cannot save the encoder to '{path}': weight {nonfinite[0]!r} holds NaN or inf "
            "values (the training diverged)"
        )
    arch = {
        "num_layers": int(encoder.num_layers),
        "K_down": int(encoder.K_down),
        "K_up": int(encoder.K_up),
        "hidden_channels": int(encoder.hidden_channels),
        "act": str(encoder.act),
        "readout": "hodge" if isinstance(encoder.readout, HodgeReadout) else encoder.readout_name,
        "normalize": bool(encoder.normalize),
        "bias": encoder.convs[0].bias is not None,
    }
    obj = {
        "format": CHECKPOINT_FORMAT,
        "version": _VERSION,
        "state_dict": {k: v.detach().cpu().clone() for k, v in encoder.state_dict().items()},
        "metadata": {
            "architecture": arch,
            "complex": {"sizes": list(data.sizes), "fingerprint": data.fingerprint},
            "dataset": data.name,
            "config": config.name,
            **extra,
        },
    }
    atomic_torch_save(obj, path)


def _fail(path: Any, why: str) -> ValueError:
    return ValueError(f"'{path}' is not a usable topo_contrastive encoder checkpoint: {why}")


def load_encoder(
    path: str | os.PathLike,
    data: ExperimentData | None = None,
    expected: dict[str, Any] | None = None,
) -> tuple[SCNN, dict[str, Any]]:
    """Load an encoder saved by :func:`save_encoder` (with ``weights_only=True``).

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
            architecture, or weights with NaN or inf values.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint '{path}' does not exist")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated, foreign or pickled-class file
        raise _fail(
            path, f"it cannot be read with weights_only=True ({type(err).__name__})"
        ) from err
    if not isinstance(obj, dict) or obj.get("format") != CHECKPOINT_FORMAT:
        raise _fail(path, "it has no 'format' entry 'topo_contrastive.encoder'")
    if obj.get("version") != _VERSION:
        raise _fail(path, f"unsupported version {obj.get('version')!r}")
    meta = obj.get("metadata")
    state = obj.get("state_dict")
    if not isinstance(meta, dict) or not isinstance(state, dict):
        raise _fail(path, "missing metadata or state_dict")
    arch = meta.get("architecture", {})
    if any(k not in arch for k in _ARCH_KEYS):
        raise _fail(path, f"its architecture metadata lacks some of {_ARCH_KEYS}")
    if data is not None:
        sizes = tuple(meta.get("complex", {}).get("sizes", ()))
        fingerprint = meta.get("complex", {}).get("fingerprint")
        if sizes != data.sizes or fingerprint != data.fingerprint:
            raise ValueError(
                f"checkpoint '{path}' was trained on another complex: (N0, N1, N2) = {sizes}, "
                f"fingerprint {fingerprint}, but dataset {data.name!r} has {data.sizes}, "
                f"fingerprint {data.fingerprint}; evaluate it on the dataset it was trained on"
            )
    if expected:
        diff = {k: (arch.get(k), v) for k, v in expected.items() if k in arch and arch.get(k) != v}
        if diff:
            detail = ", ".join(
                f"{k}: checkpoint {a!r} vs expected {b!r}" for k, (a, b) in diff.items()
            )
            raise ValueError(
                f"checkpoint '{path}' has another architecture than expected ({detail})"
            )
    readout: str | HodgeReadout = str(arch["readout"])
    if readout == "hodge":
        if data is None:
            raise ValueError(
                f"checkpoint '{path}' has a HodgeReadout, which needs the complex: pass `data`"
            )
        readout = HodgeReadout(data.hodge)
    encoder = SCNN(
        in_channels=1,
        hidden_channels=int(arch["hidden_channels"]),
        num_layers=int(arch["num_layers"]),
        K_down=int(arch["K_down"]),
        K_up=int(arch["K_up"]),
        act=str(arch["act"]),
        readout=readout,
        normalize=bool(arch["normalize"]),
        bias=bool(arch.get("bias", True)),
    )
    own = encoder.state_dict()
    if set(own) != set(state):
        raise _fail(path, f"its weights are {sorted(state)}, expected {sorted(own)}")
    bad = [k for k in own if tuple(own[k].shape) != tuple(state[k].shape)]
    if bad:
        k = bad[0]
        raise _fail(
            path,
            f"weight {k!r} has shape {tuple(state[k].shape)} but the stored architecture "
            f"(width {arch['hidden_channels']}) needs {tuple(own[k].shape)}",
        )
    nonfinite = _nonfinite_weights(state)
    if nonfinite:
        raise _fail(
            path,
            f"weight {nonfinite[0]!r} holds NaN or inf values ({len(nonfinite)} of "
            f"{len(state)} tensors do; a diverged run or a corrupted file)",
        )
    encoder.load_state_dict(state)
    encoder.eval()
    return encoder, meta


def _nonfinite_weights(state: dict[str, Any]) -> list[str]:
    """Names of the floating tensors of ``state`` that hold NaN or inf entries."""
    return [
        k
        for k, v in state.items()
        if isinstance(v, torch.Tensor) and v.is_floating_point() and not bool(v.isfinite().all())
    ]
