"""Pinned numeric code paths for runs whose numbers are compared across machines (private).

Why the quick preset's numbers moved between two machines of the same kind: floating-point
sums are not associative, and the libraries choose their kernels by the CPU they find and by
the thread count. On x86 these choices are made by PyTorch's own vectorised kernels
(``ATEN_CPU_CAPABILITY``: default / AVX2 / AVX-512), MKL's BLAS and sparse routines
(``MKL_CBWR``, MKL's Conditional Numerical Reproducibility), oneDNN (``ONEDNN_MAX_CPU_ISA``),
OpenBLAS under numpy / scipy (``OPENBLAS_CORETYPE``), and the number of threads that split a
reduction. A one-epoch training run amplifies a last-bit difference into a different
accuracy. :func:`pin_code_paths` fixes all of them to the AVX2 paths, which every machine of
this kind (and every x86-64 CPU since 2013) has, so that the same command gives the same
numbers on any such machine; the thread count is fixed by the caller
(``torch.set_num_threads``).

The variables must be set before ``torch`` and ``numpy`` load their libraries: the command line
calls :func:`pin_code_paths` before it imports either. Values a user set already are kept.
"""

from __future__ import annotations

import os
import sys

__all__ = ["PINNED_ENV", "idle_cores", "pin_code_paths", "usable_cores"]

#: The environment that pins the kernels' code paths to AVX2 (see the module docstring).
PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}


def pin_code_paths() -> str:
    """Set :data:`PINNED_ENV` (where unset) and return one line saying what holds.

    Returns:
        ``"pinned to AVX2 (...)"``, or a line naming the libraries that were loaded already
        (then the pins cannot take effect in this process).
    """
    loaded = [m for m in ("torch", "numpy") if m in sys.modules]
    for key, value in PINNED_ENV.items():
        os.environ.setdefault(key, value)
    shown = ", ".join(f"{k}={os.environ[k]}" for k in PINNED_ENV)
    if loaded:
        return (
            f"code paths not pinned ({' and '.join(loaded)} loaded before the pins; "
            f"set {shown} before starting Python)"
        )
    return f"code paths pinned ({shown})"


def _allowed_cpus(count: int) -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(count))


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask; ``os.cpu_count()`` elsewhere)."""
    return len(_allowed_cpus(os.cpu_count() or 1))


def _cpu_times() -> list[tuple[int, int]] | None:
    """``(busy, total)`` jiffies of every CPU from ``/proc/stat`` (``None`` where unreadable)."""
    try:
        with open("/proc/stat") as f:
            lines = [ln.split() for ln in f if ln.startswith("cpu") and ln[3].isdigit()]
    except OSError:
        return None
    out = []
    for fields in lines:
        values = [int(v) for v in fields[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        out.append((sum(values) - idle, sum(values)))
    return out or None


def idle_cores(interval: float = 0.1, busy_above: float = 0.5) -> int | None:
    """How many of this process's CPUs are idle now: sampled over ``interval`` seconds from
    ``/proc/stat``; a CPU counts as busy when more than ``busy_above`` of its time went to
    other work. ``None`` where ``/proc/stat`` cannot be read (not Linux).
    """
    import time

    first = _cpu_times()
    if first is None:
        return None
    time.sleep(interval)
    second = _cpu_times()
    if second is None or len(second) != len(first):
        return None
    allowed = _allowed_cpus(len(first))
    idle = 0
    for cpu, ((b0, t0), (b1, t1)) in enumerate(zip(first, second, strict=True)):
        if cpu in allowed and t1 > t0 and (b1 - b0) / (t1 - t0) <= busy_above:
            idle += 1
    return idle
