"""Saving and loading encoders: weights only, with their hyper-parameters and the complex.

A saved encoder is a plain ``dict`` of tensors, numbers and strings, written with
``torch.save`` and read back with ``torch.load(path, weights_only=True)`` (no pickled
classes, so loading a file cannot run code)::

    {"format": "topo_contrastive.encoder", "version": 1,
     "state_dict": {...the SCNN's parameters and buffers...},
     "weights_sha256": "...64 hex digits...",
     "metadata": {"architecture": {"in_channels": 1, "hidden_channels": 64, "num_layers": 2,
                                   "K_down": 2, "K_up": 2, "act": "tanh",
                                   "readout": "mean", "readout_options": {}, ...},
                  "complex": {"sizes": [N0, N1, N2], "fingerprint": "..."} or None,
                  ...your own metadata (epochs, seed, losses, ...)}}

The file is written atomically (temporary file + ``os.replace``): an interrupted save never
leaves a truncated file. ``weights_sha256`` is the sha256 of the weights
(:func:`weights_digest`: every tensor's name, dtype, shape and bytes, in name order), checked
at load: weights edited after saving (other values, same shapes) are refused. A file written
before the digest was recorded loads with a warning (:class:`UncheckedWeightsWarning`). This
is the format of ``topo-contrastive pretrain``'s ``encoder.pt``.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from topo_contrastive._utils.files import atomic_torch_save, require_file
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.nn import SCNN, HodgeReadout, TopoModelXEncoder

__all__ = [
    "ENCODER_FORMAT",
    "UncheckedWeightsWarning",
    "load_encoder",
    "save_encoder",
    "weights_digest",
]

#: The ``"format"`` entry of a saved encoder.
ENCODER_FORMAT = "topo_contrastive.encoder"
_VERSION = 1
# architecture entries every saved encoder has (version 1); in_channels, bias and
# readout_options were added later and default to 1, True and {} when missing
_ARCH_KEYS = ("num_layers", "K_down", "K_up", "hidden_channels", "act", "readout", "normalize")
_PLAIN = (str, int, float, bool, type(None))


class UncheckedWeightsWarning(UserWarning):
    """A checkpoint without a recorded ``weights_sha256`` (written before it was recorded):
    its weights load, but nothing can tell whether they were changed after saving."""


def weights_digest(state: Mapping[str, torch.Tensor]) -> str:
    """Hex sha256 of a ``state_dict``: every tensor's name, dtype, shape and bytes, in name
    order (the same weights give the same digest on any machine and device)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.numel():  # an empty buffer (e.g. the harmonic basis at beta_1 = 0) adds no bytes
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _architecture(encoder: SCNN, complex: ComplexOperators | None) -> dict[str, Any]:
    readout: str = encoder.readout_name
    options: dict[str, Any] = {}
    if isinstance(encoder.readout, HodgeReadout) and encoder.readout.basis_free:
        readout = "hodge"
        options = {"pool": encoder.readout.pool, "energies": True, "basis_free": True}
    elif isinstance(encoder.readout, HodgeReadout):
        readout = "hodge"
        options = {"pool": encoder.readout.pool, "energies": bool(encoder.readout.energies)}
        if encoder.readout.harmonic_channels is not None:
            options["harmonic_channels"] = int(encoder.readout.harmonic_channels)
        if encoder.readout.harmonic == "sketch":  # rebuilt as the same sketch at load
            options["harmonic"] = "sketch"
            options["sketch_dim"] = int(encoder.readout.harmonic_dim)
            options["sketch_seed"] = int(encoder.readout.sketch_seed)
        if complex is None:
            raise ValueError(
                "the encoder has a HodgeReadout, which is tied to its complex: pass `complex=` "
                "(its ComplexOperators or HodgeDecomposition)"
            )
        if complex.num_edges != encoder.readout.num_edges:
            raise ValueError(
                f"`complex` has N1 = {complex.num_edges} edges but the encoder's HodgeReadout "
                f"was built on N1 = {encoder.readout.num_edges}"
            )
    elif not isinstance(encoder.readout, str):
        raise TypeError(
            f"cannot save a readout module of type {type(encoder.readout).__name__} (only the "
            "string readouts and HodgeReadout can be rebuilt at load); save "
            "encoder.state_dict() with torch.save instead"
        )
    return {
        "in_channels": int(encoder.in_channels),
        "hidden_channels": int(encoder.hidden_channels),
        "num_layers": int(encoder.num_layers),
        "K_down": int(encoder.K_down),
        "K_up": int(encoder.K_up),
        "act": str(encoder.act),
        "readout": readout,
        "readout_options": options,
        "normalize": bool(encoder.normalize),
        "bias": encoder.convs[0].bias is not None,
        "input_skip": bool(getattr(encoder, "input_skip", False)),
    }


def _check_plain(value: Any, where: str) -> None:
    """Raise ``TypeError`` unless ``value`` loads with ``weights_only=True`` (JSON-like)."""
    if isinstance(value, _PLAIN) or isinstance(value, torch.Tensor):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"metadata key {k!r} in {where} must be a str or an int")
            _check_plain(v, f"{where}[{k!r}]")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]")
        return
    raise TypeError(
        f"metadata {where} is a {type(value).__name__}; use str, int, float, bool, None, "
        "tensors, lists and dicts (they load with weights_only=True)"
    )


def _operators(complex: Any, name: str = "complex") -> ComplexOperators | None:
    if complex is None or isinstance(complex, ComplexOperators):
        return complex
    if isinstance(complex, HodgeDecomposition):
        return complex.complex
    raise TypeError(
        f"`{name}` must be a ComplexOperators, a HodgeDecomposition or None, got "
        f"{type(complex).__name__}"
    )


def save_encoder(
    encoder: SCNN,
    path: str | os.PathLike,
    complex: ComplexOperators | HodgeDecomposition | None = None,
    **metadata: Any,
) -> None:
    """Write an encoder's weights, hyper-parameters and complex fingerprint to ``path``.

    Args:
        encoder (SCNN): the encoder (string readout ``"mean"``, ``"sum"``, ``"max"``, or a
            :class:`~topo_contrastive.nn.HodgeReadout`).
        path (str or os.PathLike): the file to write (atomically).
        complex (ComplexOperators or HodgeDecomposition, optional): the complex the
            encoder was trained on; its sizes and
            :meth:`~topo_contrastive.ComplexOperators.fingerprint` are stored so that
            :func:`load_encoder` can refuse another complex. Required for a
            ``HodgeReadout``. (default: ``None``)
        **metadata: more entries for the file's ``metadata`` (epochs, seed, losses, ...):
            str, int, float, bool, None, tensors, and lists/dicts of them.

    Raises:
        TypeError: ``encoder`` not an :class:`~topo_contrastive.nn.SCNN`, a readout module
            other than ``HodgeReadout``, ``complex`` of another type, or metadata that would
            not load with ``weights_only=True``.
        ValueError: a ``HodgeReadout`` without ``complex`` (or built on another number of
            edges), metadata that overrides ``architecture``/``complex``, weights with
            NaN/inf, or a ``path`` that is an existing folder (before anything is written).
        OSError: the write failed (a full disk, a read-only folder), its message naming
            ``path``; an earlier file there is unchanged.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]],
        ...                                          [[0, 1, 2]])
        >>> encoder = SCNN(hidden_channels=8, readout=HodgeReadout(HodgeDecomposition(ops)))
        >>> save_encoder(encoder, "encoder.pt", complex=ops, epochs=30)
        >>> loaded, meta = load_encoder("encoder.pt", complex=ops)
        >>> meta["epochs"], meta["architecture"]["readout"], loaded.out_channels
        (30, 'hodge', 16)
        >>> x = torch.randn(3, ops.num_edges, 1)
        >>> L = ops.laplacians()
        >>> torch.equal(loaded(x, L), encoder.eval()(x, L))
        True
    """
    if not isinstance(encoder, (SCNN, TopoModelXEncoder)):
        raise TypeError(
            f"`encoder` must be an SCNN or a TopoModelXEncoder, got {type(encoder).__name__}"
        )
    if os.path.isdir(os.path.expanduser(os.fspath(path))):
        raise ValueError(
            f"`path` '{path}' is a folder, expected the checkpoint's file path (such as "
            f"'{os.path.join(os.fspath(path), 'encoder.pt')}')"
        )
    ops = _operators(complex)
    reserved = {"architecture", "complex"} & set(metadata)
    if reserved:
        raise ValueError(f"metadata must not set the reserved entries {sorted(reserved)}")
    _check_plain(metadata, "metadata")
    state = {k: v.detach().cpu().clone() for k, v in encoder.state_dict().items()}
    nonfinite = _nonfinite_weights(state)
    if nonfinite:
        raise ValueError(
            f"cannot save the encoder to '{path}': weight {nonfinite[0]!r} holds NaN or inf "
            "values (the training diverged)"
        )
    obj = {
        "format": ENCODER_FORMAT,
        "version": _VERSION,
        "state_dict": state,
        "weights_sha256": weights_digest(state),
        "metadata": {
            "architecture": _tmx_architecture(encoder)
            if isinstance(encoder, TopoModelXEncoder)
            else _architecture(encoder, ops),
            "complex": None
            if ops is None
            else {
                "sizes": [int(ops.num_nodes), int(ops.num_edges), int(ops.num_faces)],
                "fingerprint": ops.fingerprint(),
            },
            **metadata,
        },
    }
    atomic_torch_save(obj, path)


def _nonfinite_weights(state: Mapping[str, torch.Tensor]) -> list[str]:
    """Names of the floating tensors of ``state`` that hold NaN or inf entries."""
    return [
        k for k, v in state.items() if v.is_floating_point() and not bool(v.isfinite().all())
    ]


def _fail(path: Any, why: str) -> ValueError:
    return ValueError(f"'{path}' is not a usable topo_contrastive encoder checkpoint: {why}")


def _read_checkpoint(path: Any) -> tuple[dict, dict, dict, bool, Any]:
    """The metadata, weights and architecture of a checkpoint file, whether its encoder is
    a TopoModelX one, and its weights' recorded digest; a ``ValueError`` naming the file for
    anything else."""
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated, foreign or pickled-class file
        raise _fail(
            path, f"it cannot be read with weights_only=True ({type(err).__name__})"
        ) from err
    if not isinstance(obj, dict) or obj.get("format") != ENCODER_FORMAT:
        raise _fail(path, f"it has no 'format' entry {ENCODER_FORMAT!r}")
    if obj.get("version") != _VERSION:
        raise _fail(path, f"unsupported version {obj.get('version')!r}")
    meta = obj.get("metadata")
    state = obj.get("state_dict")
    if not isinstance(meta, dict) or not isinstance(state, dict):
        raise _fail(path, "missing metadata or state_dict")
    if not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise _fail(path, "its state_dict holds entries that are not tensors")
    arch = meta.get("architecture", {})
    tmx = isinstance(arch, dict) and arch.get("kind") == "topomodelx"
    if not isinstance(arch, dict) or (not tmx and any(k not in arch for k in _ARCH_KEYS)):
        raise _fail(path, f"its architecture metadata lacks some of {_ARCH_KEYS}")
    return meta, state, arch, tmx, obj.get("weights_sha256")


def _check_same_complex(path: Any, ops: Any, saved: dict) -> None:
    """Refuse a checkpoint trained on another complex than ``ops``."""
    sizes = tuple(saved.get("sizes", ()))
    own = (int(ops.num_nodes), int(ops.num_edges), int(ops.num_faces))
    if sizes != own or saved.get("fingerprint") != ops.fingerprint():
        raise ValueError(
            f"checkpoint '{path}' was trained on another complex: (N0, N1, N2) = {sizes}, "
            f"fingerprint {saved.get('fingerprint')}, but the given complex has {own}, "
            f"fingerprint {ops.fingerprint()}; use it on the complex it was trained on"
        )


def load_encoder(
    path: str | os.PathLike,
    complex: ComplexOperators | HodgeDecomposition | None = None,
    expected: Mapping[str, Any] | None = None,
) -> tuple[SCNN, dict[str, Any]]:
    """Load an encoder saved by :func:`save_encoder` (``torch.load(weights_only=True)``).

    Args:
        path (str or os.PathLike): the file.
        complex (ComplexOperators or HodgeDecomposition, optional): the complex to use
            the encoder on. If given, it must be the one the encoder was saved with (same
            sizes and fingerprint). Required for an encoder with a ``HodgeReadout``, which
            is rebuilt on it (pass the ``HodgeDecomposition`` you already have to avoid
            building a second one). (default: ``None``)
        expected (Mapping[str, Any], optional): architecture values the encoder must have,
            e.g. ``{"hidden_channels": 64, "K_up": 2}``. (default: ``None``)

    Returns:
        ``(encoder, metadata)``: the :class:`~topo_contrastive.nn.SCNN` in eval mode on
        the CPU, and the file's metadata (``architecture``, ``complex`` and your entries).

    Raises:
        FileNotFoundError: ``path`` does not exist (a folder there: ``ValueError``).
        TypeError: ``complex`` of another type.
        ValueError: an unreadable, foreign or truncated file; an unsupported version;
            an encoder saved with another complex than ``complex``; a ``HodgeReadout``
            without ``complex``; an architecture number (a width, an order) above the
            number of stored weight entries (checked before the encoder is built);
            an architecture other than ``expected``; weights that do
            not match the stored architecture or that hold NaN/inf; weights whose sha256 is
            not the one recorded at save time (edited after saving).

    Warns:
        UncheckedWeightsWarning: the file has no recorded ``weights_sha256`` (written by an
            older version): the weights load unchecked.
    """
    ops = _operators(complex)
    require_file(path, "checkpoint")
    meta, state, arch, tmx, digest = _read_checkpoint(path)
    saved = meta.get("complex") or {}
    if ops is not None and saved:
        _check_same_complex(path, ops, saved)
    if expected:
        diff = {k: (arch.get(k), v) for k, v in expected.items() if k in arch and arch[k] != v}
        if diff:
            detail = ", ".join(
                f"{k}: checkpoint {a!r} vs expected {b!r}" for k, (a, b) in diff.items()
            )
            raise ValueError(
                f"checkpoint '{path}' has another architecture than expected ({detail})"
            )
    _check_sizes(path, arch, state)
    encoder = _build_tmx(path, arch) if tmx else _build(path, arch, complex)
    own_state = encoder.state_dict()
    if set(own_state) != set(state):
        raise _fail(path, f"its weights are {sorted(state)}, expected {sorted(own_state)}")
    bad = [k for k in own_state if tuple(own_state[k].shape) != tuple(state[k].shape)]
    if bad:
        k = bad[0]
        raise _fail(
            path,
            f"weight {k!r} has shape {tuple(state[k].shape)} but the stored architecture "
            f"(width {arch['hidden_channels']}) needs {tuple(own_state[k].shape)}",
        )
    nonfinite = _nonfinite_weights(state)
    if nonfinite:
        raise _fail(
            path,
            f"weight {nonfinite[0]!r} holds NaN or inf values ({len(nonfinite)} of "
            f"{len(state)} tensors do; a diverged run or a corrupted file)",
        )
    _check_digest(path, digest, state)
    encoder.load_state_dict(state)
    encoder.eval()
    return encoder, meta


def _integers(value: Any, where: str) -> list[tuple[str, int]]:
    """The integers of an architecture entry (nested dicts, lists and tuples), named."""
    if isinstance(value, Mapping):
        return [i for k, v in value.items() for i in _integers(v, f"{where}.{k}")]
    if isinstance(value, (list, tuple)):
        return [i for j, v in enumerate(value) for i in _integers(v, f"{where}[{j}]")]
    if isinstance(value, int) and not isinstance(value, bool):
        return [(where, value)]
    return []


def _check_sizes(path: Any, arch: Mapping[str, Any], state: Mapping[str, torch.Tensor]) -> None:
    """The sizes in the architecture (widths, orders, layers: not covered by the weights'
    sha256) are backed by the stored weights, checked before the encoder is built: every
    width or count of a model is at most its number of weight entries, so no number may
    exceed the stored total (an edited ``hidden_channels = 10**9`` would otherwise
    allocate the model first)."""
    total = sum(int(t.numel()) for t in state.values())
    for where, value in _integers(dict(arch), "architecture"):
        if value > max(total, 1):
            raise _fail(
                path,
                f"its {where} = {value} exceeds the {total} weight entries it stores: the "
                "architecture does not belong to these weights (edited after saving?)",
            )


def _check_digest(path: Any, recorded: Any, state: Mapping[str, torch.Tensor]) -> None:
    """Compare the weights with the sha256 recorded at save time (warn when none is)."""
    if recorded is None:
        warnings.warn(
            f"checkpoint '{path}' has no recorded weights_sha256 (written before the digest "
            "was recorded): its weights cannot be checked against changes after saving; "
            "save it again with save_encoder to record one",
            UncheckedWeightsWarning,
            stacklevel=3,
        )
        return
    if not isinstance(recorded, str) or len(recorded) != 64:
        raise _fail(path, f"its weights_sha256 entry {recorded!r} is not a sha256 hex digest")
    actual = weights_digest(state)
    if actual != recorded:
        raise _fail(
            path,
            f"its weights were changed after saving: their sha256 is {actual[:16]}..., but "
            f"{recorded[:16]}... was recorded at save time (an edited or corrupted file)",
        )


def _tmx_architecture(encoder: TopoModelXEncoder) -> dict[str, Any]:
    """The architecture entry of a TopoModelX encoder: its model and the model's arguments."""

    def plain(v: Any) -> Any:
        return list(v) if isinstance(v, tuple) else v

    kwargs = {k: plain(v) for k, v in encoder.model_kwargs.items()}
    _check_plain(kwargs, "the TopoModelX model's arguments")
    return {
        "kind": "topomodelx",
        "model": encoder.kind,
        "readout": encoder.readout,
        "model_kwargs": kwargs,
    }


def _build_tmx(path: Any, arch: Mapping[str, Any]) -> TopoModelXEncoder:
    """The TopoModelX encoder described by ``arch`` (needs the ``topomodelx`` extra)."""
    try:
        return TopoModelXEncoder(
            str(arch["model"]), readout=str(arch.get("readout", "mean")),
            **dict(arch.get("model_kwargs") or {}),
        )  # fmt: skip
    except ImportError as err:
        raise ImportError(
            f"checkpoint '{path}' holds a TopoModelX {arch.get('model')!r} encoder, which needs "
            f"TopoModelX installed ({err})"
        ) from err
    except (KeyError, TypeError, ValueError) as err:
        raise _fail(path, f"its TopoModelX architecture is invalid ({err})") from err


def _build(path: Any, arch: Mapping[str, Any], complex: Any) -> SCNN:
    """The encoder described by ``arch`` (``complex`` rebuilds a ``HodgeReadout``)."""
    readout: str | HodgeReadout = str(arch["readout"])
    options = dict(arch.get("readout_options") or {})
    if readout == "hodge" and options.get("basis_free"):
        readout = HodgeReadout(None, pool=str(options.get("pool", "mean")), energies=True)
    elif readout == "hodge":
        if complex is None:
            raise ValueError(
                f"checkpoint '{path}' reads out with a HodgeReadout tied to the one complex it "
                "was pre-trained on (its harmonic basis): pass `complex=` (a ComplexOperators "
                "or HodgeDecomposition); it cannot read samples on complexes of their own "
                "(pre-train on them: the basis-free HodgeReadout; or use a mean/sum/max readout)"
            )
        hodge = complex if isinstance(complex, HodgeDecomposition) else HodgeDecomposition(complex)
        kept = options.get("harmonic_channels")
        sketch = options.get("harmonic") == "sketch"
        if sketch and not isinstance(options.get("sketch_dim"), int):
            raise _fail(path, "its HodgeReadout is a sketch without an integer 'sketch_dim'")
        readout = HodgeReadout(
            hodge,
            pool=str(options.get("pool", "mean")),
            energies=bool(options.get("energies")),
            harmonic_channels=None if kept is None else int(kept),
            # a checkpoint without the entry was written with the exact basis
            harmonic="sketch" if sketch else "exact",
            sketch_dim=int(options["sketch_dim"]) if sketch else None,
            sketch_seed=int(options.get("sketch_seed", 0)),
        )
    try:
        return SCNN(
            in_channels=int(arch.get("in_channels", 1)),
            hidden_channels=int(arch["hidden_channels"]),
            num_layers=int(arch["num_layers"]),
            K_down=int(arch["K_down"]),
            K_up=int(arch["K_up"]),
            act=str(arch["act"]),
            readout=readout,
            normalize=bool(arch["normalize"]),
            bias=bool(arch.get("bias", True)),
            input_skip=bool(arch.get("input_skip", False)),
        )
    except (TypeError, ValueError) as err:
        raise _fail(path, f"its architecture is invalid ({err})") from err

