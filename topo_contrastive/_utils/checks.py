"""Argument checks shared by the public entry points.

One place for the classes of bad input that the newer APIs used to let through: numbers of
numpy's scalar types (accepted wherever Python's are), counts and learning rates out of range,
seeds that overflow a generator, sample indices that are negative, fractional, a boolean mask,
repeated or shared between the training, validation and test parts, NaN/inf in a signal, and
label values that are not class ids. Every function raises ``TypeError`` / ``ValueError``
whose message names the argument, what was expected and what was given.

Imports numpy at import time, torch only where a tensor is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: The largest seed accepted: NumPy's ``RandomState`` (scikit-learn's ``random_state``)
#: takes seeds below 2**32; the half range leaves room for the derived seeds (``seed + s``).
MAX_SEED = 2**31 - 1
#: The most training epochs a public function or command accepts (a typo such as
#: ``epochs=10**9`` is refused instead of running for days).
MAX_EPOCHS = 100_000


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(
    value: Any, name: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as a Python ``int``: a Python or numpy integer (not a bool) in
    ``[minimum, maximum]``.

    Raises:
        TypeError: not an integer (a float, even ``2.0``, a bool, a string).
        ValueError: outside the bounds.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an int, got {type(value).__name__} ({_show(value)})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"`{name}` must be <= {maximum}, got {value}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a Python ``bool`` (a Python or numpy bool).

    Raises:
        TypeError: anything else (``"no"``, ``0``).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a bool, got {type(value).__name__} ({_show(value)})")
    return bool(value)


def check_real(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    open_low: bool = False,
) -> float:
    """``value`` as a finite Python ``float`` in ``[minimum, maximum]`` (``(minimum,
    maximum]`` with ``open_low``): a Python or numpy real number (not a bool).

    Raises:
        TypeError: not a real number.
        ValueError: NaN, inf, or outside the bounds.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"`{name}` must be a real number, got {type(value).__name__} ({_show(value)})"
        )
    value = float(value)
    low_ok = minimum is None or (value > minimum if open_low else value >= minimum)
    if not math.isfinite(value) or not low_ok or (maximum is not None and value > maximum):
        lo = "" if minimum is None else f"{'>' if open_low else '>='} {minimum:g}"
        hi = "" if maximum is None else f"<= {maximum:g}"
        bounds = " and ".join(b for b in (lo, hi) if b)
        raise ValueError(
            f"`{name}` must be a finite number{' ' + bounds if bounds else ''}, got {value!r}"
        )
    return value


def check_device(value: Any, name: str = "device") -> Any:
    """``value`` as a ``torch.device`` (``None`` stays ``None``): a ``torch.device``, a
    device string (``"cpu"``, ``"cuda"``, ``"cuda:0"``) or a CUDA index.

    Raises:
        ValueError: a string or object that torch does not read as a device (``"gpu0"``).
    """
    if value is None:
        return None
    import torch

    try:
        return torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be a torch.device or a device string such as 'cpu', 'cuda' or "
            f"'cuda:0', got {_show(value)}"
        ) from None


def check_lr(value: Any, name: str) -> float:
    """A learning rate: a finite number > 0."""
    return check_real(value, name, minimum=0.0, open_low=True)


def check_seed(value: Any, name: str = "seed", count: int = 1) -> int:
    """A seed: an integer in ``[0, MAX_SEED]``; with ``count``, the seeds ``value``, ...,
    ``value + count - 1`` must all be in range.

    Raises:
        TypeError: not an integer.
        ValueError: negative, or ``value + count - 1`` above :data:`MAX_SEED`.
    """
    seed = check_int(value, name, minimum=0)
    if seed + max(int(count), 1) - 1 > MAX_SEED:
        span = f"{name} + {count - 1} = {seed + count - 1}" if count > 1 else f"{seed}"
        raise ValueError(
            f"`{name}` must be an int in [0, {MAX_SEED}] (2**31 - 1; generators take seeds "
            f"below 2**32), got {span}"
        )
    return seed


def check_indices(
    idx: Any, name: str, size: int, allow_empty: bool = False
) -> np.ndarray:
    """Sample indices: a 1-D sequence of distinct integers in ``[0, size)``.

    A boolean mask is refused (``numpy.flatnonzero(mask)`` gives its indices), and so are
    fractional numbers (``0.5``); integral floats (``2.0``) are accepted. ``None`` is empty.

    Returns:
        ``int64 [n]`` in the given order.

    Raises:
        TypeError: a boolean mask, strings, fractional numbers.
        ValueError: more than one dimension, empty (unless ``allow_empty``), out of range,
            or an index given twice.
    """
    if idx is None:
        arr = np.zeros(0, dtype=np.int64)
    else:
        if hasattr(idx, "detach"):  # a torch tensor
            idx = idx.detach().cpu().numpy()
        arr = np.asarray(idx)
    if arr.dtype == bool:
        raise TypeError(
            f"`{name}` must hold sample indices, got a boolean mask of shape {arr.shape}; pass "
            f"numpy.flatnonzero(mask)"
        )
    if arr.ndim != 1 and not (arr.ndim == 0 and arr.size == 0):
        if arr.ndim == 0:
            raise ValueError(f"`{name}` must be a 1-D sequence of sample indices, got a scalar")
        raise ValueError(
            f"`{name}` must be a 1-D sequence of sample indices, got shape {arr.shape}"
        )
    if arr.size == 0:
        if not allow_empty:
            raise ValueError(f"`{name}` must hold at least one sample index, got none")
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (np.nan_to_num(arr) % 1 != 0)
        if bad.any():
            raise TypeError(
                f"`{name}` must hold integer sample indices, got {arr[bad][0].item()!r} "
                f"(position {int(np.flatnonzero(bad)[0])})"
            )
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"`{name}` must hold integer sample indices, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= size:
        bad_value = arr.min() if arr.min() < 0 else arr.max()
        raise ValueError(
            f"`{name}` must hold indices in [0, {size}) (the {size} samples), got "
            f"{_show(bad_value.item())}"
        )
    out = arr.astype(np.int64)
    uniq, counts = np.unique(out, return_counts=True)
    if (counts > 1).any():
        raise ValueError(
            f"`{name}` holds the sample {int(uniq[counts > 1][0])} {int(counts.max())} times; "
            "give every index once"
        )
    return out


def check_disjoint(parts: Mapping[str, np.ndarray]) -> None:
    """The index sets ``parts`` (``{name: int64 [n]}``) share no sample.

    Raises:
        ValueError: naming the two parts and a shared sample.
    """
    names = list(parts)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = np.intersect1d(parts[a], parts[b])
            if shared.size:
                raise ValueError(
                    f"`{a}` and `{b}` share {shared.size} sample(s) (e.g. {int(shared[0])}); "
                    "the training, validation and test samples must be disjoint"
                )


def check_finite(x: Any, name: str, unit: str = "sample") -> None:
    """NaN/inf nowhere in ``x`` (a tensor or an array; rows along the first dimension).

    Raises:
        ValueError: naming ``name``, the first offending rows (``unit`` names them) and
            their count.
    """
    if hasattr(x, "detach"):
        import torch

        if not x.is_floating_point() and not x.is_complex():
            return
        x = x.detach()
        # one reduction first: a NaN or inf anywhere makes the sum non-finite (a sum that
        # overflows with finite entries falls through to the elementwise test)
        if x.numel() and bool(torch.isfinite(x.sum())):
            return
        bad = ~torch.isfinite(x)
        if not bool(bad.any()):
            return
        rows = bad.reshape(bad.shape[0], -1).any(dim=1).nonzero().view(-1).cpu().numpy() \
            if bad.dim() else np.zeros(1, dtype=np.int64)  # fmt: skip
    else:
        arr = np.asarray(x)
        if arr.dtype.kind not in "fc":
            return
        bad = ~np.isfinite(arr)
        if not bad.any():
            return
        rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1)) if bad.ndim else \
            np.zeros(1, dtype=np.int64)  # fmt: skip
    shown = ", ".join(str(int(r)) for r in rows[:5]) + (", ..." if rows.size > 5 else "")
    raise ValueError(
        f"`{name}` contains NaN or inf values ({unit}{'s' if rows.size > 1 else ''} {shown}; "
        f"{rows.size} in all); the inputs must be finite"
    )


# labels: values a float64 represents exactly and an int64 holds
_INT64_MAX = np.iinfo(np.int64).max


def label_values(labels: Any, name: str = "labels") -> np.ndarray:
    """Label values of any integer type or integral floats as ``int64 [S]`` (unchanged).

    Raises:
        TypeError: booleans, strings, fractional or non-finite floats.
        ValueError: values outside the int64 range (e.g. ``1e20``, ``2**63`` as uint64).
    """
    if hasattr(labels, "detach"):
        labels = labels.detach().cpu().numpy()
    arr = np.asarray(labels).reshape(-1)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (np.nan_to_num(arr) % 1 != 0)
        if bad.any():
            raise TypeError(
                f"`{name}` must hold integer class ids, got the value {arr[bad][0].item()!r} "
                f"(sample {int(np.flatnonzero(bad)[0])})"
            )
        huge = np.abs(arr) >= 2.0**63
        if huge.any():
            raise ValueError(
                f"`{name}` holds {arr[huge][0].item()!r} (sample {int(np.flatnonzero(huge)[0])}), "
                "outside the int64 range of class ids"
            )
    elif arr.dtype.kind == "u":
        if arr.size and arr.max() > _INT64_MAX:
            i = int(np.argmax(arr))
            raise ValueError(
                f"`{name}` holds {int(arr[i])} (sample {i}), outside the int64 range of class ids"
            )
    elif arr.dtype.kind != "i":
        raise TypeError(f"`{name}` must hold integer class ids, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def class_ids(labels: Any, name: str = "labels") -> tuple[np.ndarray, np.ndarray]:
    """Class ids ``0``, ..., ``C - 1`` of label values of any integer type or integral floats
    (negative and non-contiguous values included), as the SVM probe treats them.

    Returns:
        ``(ids, classes)``: ``int64 [S]`` with ``classes[ids] == labels``, and the sorted
        distinct label values ``int64 [C]``.

    Raises:
        TypeError / ValueError: as :func:`label_values`.
    """
    classes, ids = np.unique(label_values(labels, name), return_inverse=True)
    return ids.reshape(-1).astype(np.int64), classes.astype(np.int64)


def check_seeds(seeds: Any, name: str = "seeds") -> list[int]:
    """A non-empty sequence of distinct seeds (:func:`check_seed` each).

    Raises:
        TypeError: not a sequence, or a seed that is not an integer.
        ValueError: empty, a seed out of range, or a seed given twice.
    """
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"`{name}` must be a sequence of seeds, got {type(seeds).__name__}")
    out = [check_seed(s, f"{name}[{i}]") for i, s in enumerate(seeds)]
    if not out:
        raise ValueError(f"`{name}` is empty: give at least one seed")
    if len(set(out)) != len(out):
        twice = next(s for s in out if out.count(s) > 1)
        raise ValueError(f"`{name}` holds the seed {twice} twice; give every seed once")
    return out
