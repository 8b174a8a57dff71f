"""Pinned numeric code paths for runs whose numbers are compared across machines.

Why the quick preset's numbers moved between two machines of the same kind: floating-point
sums are not associative, and the libraries choose their kernels by the CPU they find and by
the thread count. On x86 these choices are made by PyTorch's own vectorised kernels
(``ATEN_CPU_CAPABILITY``: default / AVX2 / AVX-512), MKL's BLAS and sparse routines
(``MKL_CBWR``, MKL's Conditional Numerical Reproducibility), oneDNN (``ONEDNN_MAX_CPU_ISA``),
OpenBLAS under numpy / scipy (``OPENBLAS_CORETYPE``), and the number of threads that split a
reduction. A one-epoch training run amplifies a last-bit difference into a different
accuracy. :data:`PINNED_ENV` fixes all of them to the AVX2 paths, which every machine of
this kind (and every x86-64 CPU since 2013) has, so that the same command gives the same
numbers on any such machine; the thread count is fixed by the caller
(``torch.set_num_threads``).

The variables act only when they are set before ``torch`` and ``numpy`` load their
libraries, that is before the process starts: a command whose numbers are pinned re-executes
its process in :func:`pinned_environment` (:func:`restart_pinned`, called by the command line
for ``reproduce --quick``); :data:`PINNED_MARKER` in the environment tells the re-executed
process that it runs pinned, so that it does not restart again. Values a user set already are
kept.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from typing import Any

#: The environment that pins the kernels' code paths to AVX2 (see the module docstring).
PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}
#: Set to ``"1"`` in the environment of a process started with :data:`PINNED_ENV`.
PINNED_MARKER = "TOPO_CONTRASTIVE_PINNED"


def pinned_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's environment) with :data:`PINNED_ENV` where unset
    (a user's values are kept) and :data:`PINNED_MARKER` set."""
    env = dict(os.environ if environ is None else environ)
    for key, value in PINNED_ENV.items():
        env.setdefault(key, value)
    env[PINNED_MARKER] = "1"
    return env


def runs_pinned(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``environ`` (default: this process's) is a :func:`pinned_environment` that the
    process started with (:data:`PINNED_MARKER` is set)."""
    return (os.environ if environ is None else environ).get(PINNED_MARKER) == "1"


def restart_pinned() -> None:
    """Re-execute this process in :func:`pinned_environment`: the same interpreter with the
    same command line (``sys.orig_argv``), the same process id (``os.execve``; on Windows a
    child whose exit status this process exits with). Returns at once, doing nothing, when the
    process runs pinned already (:func:`runs_pinned`) or has no command line to run again
    (an interactive interpreter, a program read from stdin).
    """
    if runs_pinned() or sys.argv[0] in ("", "-") or len(sys.orig_argv) < 2:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [sys.executable, *sys.orig_argv[1:]]
    if os.name == "nt":  # pragma: no cover - no exec that keeps the process on Windows
        import subprocess

        raise SystemExit(subprocess.call(argv, env=pinned_environment()))
    os.execve(sys.executable, argv, pinned_environment())


def pinned_line(environ: Mapping[str, str] | None = None) -> str:
    """One line saying whether the code paths are pinned in this process (``environ``)."""
    environ = os.environ if environ is None else environ
    if runs_pinned(environ):
        shown = ", ".join(f"{k}={environ.get(k, '')}" for k in PINNED_ENV)
        return f"code paths pinned ({shown})"
    shown = ", ".join(f"{k}={v}" for k, v in PINNED_ENV.items())
    return (
        f"code paths not pinned (the command was run inside Python; run it as a command, or "
        f"set {shown} and {PINNED_MARKER}=1 before starting Python)"
    )


def pinned_words(environ: Mapping[str, str] | None = None) -> str:
    """The plain-words summary of :func:`pinned_line` (the first line of a pinned command;
    the variables follow on the next line)."""
    if runs_pinned(os.environ if environ is None else environ):
        return "the same kernels on every x86-64 machine, so that its numbers repeat"
    return "kernels not pinned, so its numbers may differ on another machine"


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


#: Bytes of freed memory that the C allocator keeps for reuse (1 GiB; see
#: :func:`keep_freed_memory`).
KEEP_FREED_BYTES = 2**30


def keep_freed_memory(keep: int = KEEP_FREED_BYTES) -> bool:
    """Let glibc's allocator keep up to ``keep`` freed bytes for reuse in this process.

    PyTorch's CPU tensors come from ``malloc``. By default glibc serves every block above
    32 MiB with a fresh ``mmap`` and returns it to the kernel on ``free``; a training step
    on a large complex allocates and frees such blocks (a layer's output, its gradient) many
    times, and every new page is then faulted in and zeroed by the kernel again (a large
    share of the step's time on complexes of 10^4 edges and more). With the ``mmap``
    threshold and the trim threshold raised to ``keep`` bytes (``mallopt``), freed blocks
    stay in the heap and are reused. The cost: the process's resident memory no longer
    shrinks after its peak. A no-op outside glibc (returns ``False``).

    Returns:
        whether both thresholds were set.
    """
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    value = int(min(max(keep, 0), 2**31 - 1))
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, value)) and bool(mallopt(m_trim_threshold, value))


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (``<malloc.h>``, glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost",
    )]  # fmt: skip


def release_freed_memory(keep: int = 0) -> bool:
    """Give the freed memory that glibc's allocator holds back to the kernel
    (``malloc_trim(0)``) when it holds more than ``keep`` bytes, so that the resident set
    is again about the memory in use.

    :func:`keep_freed_memory` lets the heap keep freed blocks for reuse, but blocks of
    changing sizes fragment it: a long run of large allocations (a training step's chunks)
    would keep far more than its ``keep`` bytes. Calling this with ``keep`` at the same
    bound after such allocations caps what is kept (``keep = 0``: give back everything,
    e.g. after a set-up whose temporaries are gone). A no-op outside glibc (returns
    ``False``).

    Args:
        keep: free bytes the heap may keep without a trim (``mallinfo2``'s ``fordblks``;
            where glibc lacks ``mallinfo2`` the heap is trimmed whatever it holds).

    Returns:
        whether memory was given back.
    """
    libc = _libc()
    if libc is None:
        return False
    info = getattr(libc, "mallinfo2", None)
    if keep > 0 and info is not None:
        info.restype = _MallInfo2
        if int(info().fordblks) <= keep:
            return False
    trim = libc.malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


def _libc() -> Any:
    """glibc as a ``ctypes`` library on Linux, else ``None``."""
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
