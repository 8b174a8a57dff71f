"""A run's outputs as one unit: a lock on ``--out``, and ``--overwrite`` that replaces
an earlier result only once the new one is complete.

Every command that writes results goes through :func:`output_run`, after it has checked all of
its arguments and inputs:

- **Lock.** The run holds an exclusive lock on its target while it writes: the file
  ``.<name>.lock`` beside the target (``flock``, so the kernel frees it when the process dies,
  even by ``SIGKILL``). A second run into the same ``--out`` is refused with an error naming the
  holder (pid, host, command, start time); a lock file left by a killed run is noticed (nobody
  holds it) and taken over.
- **Fresh target** (a missing or empty folder; files none of which exist): the run writes in
  place; its completeness marker, written last, tells a finished result from an interrupted
  one, and ``--resume`` continues there.
- **Replacing an earlier result** (``overwrite``, the target not empty): the run writes into a
  hidden staging folder beside the target (a temporary of
  :func:`~topo_contrastive._utils.files.temporary_name`); only when the run
  returns normally is the result swapped in. A folder is swapped in one step
  (``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames a moment apart, during which
  the folder is absent, never mixed); the earlier folder's entries that are not outputs of the
  command (``owns``) and that the new run did not write are carried over. Files are moved in
  their order with the marker (the last file) removed first and placed last. A run that fails,
  is refused, runs out of disk space or is killed leaves the earlier result as it was (a killed
  run's staging folder is a stale temporary, removed by the next run beside it).

Imports nothing else from the package but :mod:`topo_contrastive._utils.files`.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fnmatch
import json
import os
import shutil
import socket
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from topo_contrastive._utils.files import (
    _pid_alive,
    check_output_dir,
    remove_stale_temporaries,
    temporary_name,
)

# opens the lock file without following a symbolic link (where the system can)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class OutputBusyError(ValueError):
    """``--out`` is locked by another run that is still going."""


def is_machinery(name: str) -> bool:
    """Whether the file name ``name`` is a lock file or temporary of this library (a hidden
    ``.<name>.lock`` or ``.<...>.tmp``), not a result."""
    return name.startswith(".") and (name.endswith(".lock") or name.endswith(".tmp"))


def is_empty_folder(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but this library's locks and temporaries."""
    try:
        return all(is_machinery(p.name) for p in folder.iterdir())
    except OSError:
        return False


# ---------------------------------------------------------------------------- the lock
class OutputLock:
    """An exclusive lock on an output target: the file ``.<name>.lock`` beside it, held with
    ``flock`` and holding the holder's pid, host, command and start time.

    Args:
        target: the output folder or file.
        what: how messages name it (default ``"--out"``).
    """

    def __init__(self, target: str | os.PathLike, what: str = "--out") -> None:
        self.target = Path(target).expanduser().absolute()
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.what = what
        self._fd: int | None = None
        #: the record of a dead holder whose lock file this lock took over (or ``None``)
        self.stale: dict[str, Any] | None = None

    def _record(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(sys.argv[:1] + sys.argv[1:])[:300],
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
        }

    @staticmethod
    def _read(fd: int) -> dict[str, Any] | None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = os.read(fd, 65536).decode("utf-8", "replace")
            record = json.loads(text) if text.strip() else None
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _busy(self, holder: dict[str, Any] | None) -> OutputBusyError:
        if holder:
            who = (
                f"pid {holder.get('pid')} on host {holder.get('host')}, started "
                f"{holder.get('started')}: {holder.get('command')!r}"
            )
        else:
            who = "another process"
        return OutputBusyError(
            f"{self.what} '{self.target}' is being written by another run ({who}); wait for it "
            f"to finish, or choose another {self.what} (its lock: '{self.path}')"
        )

    def acquire(self) -> OutputLock:
        """Take the lock.

        Raises:
            OutputBusyError: another live process holds it (the message names it).
            ValueError: the lock file cannot be made (an unwritable folder).
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(
                f"the output {self.what} '{self.target}' cannot be written ({type(err).__name__}"
                f": {err.strerror or err}); choose a writable folder"
            ) from err
        for _ in range(20):  # retried when a holder removes the file we opened meanwhile
            try:  # never through a symbolic link (O_NOFOLLOW: ELOOP)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
            except OSError as err:
                self._check_file()
                raise ValueError(
                    f"the output {self.what} '{self.target}' cannot be locked ('{self.path}': "
                    f"{err.strerror or err}); choose a writable folder"
                ) from err
            try:
                self._check_file(os.fstat(fd))
                if not self._lock(fd):
                    raise self._busy(self._read(fd))
                here, there = os.fstat(fd), os.stat(self.path)
            except FileNotFoundError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            if (here.st_ino, here.st_dev) != (there.st_ino, there.st_dev):
                os.close(fd)
                continue
            previous = self._read(fd)
            if previous and previous.get("pid") not in (None, os.getpid()):
                self.stale = previous  # its holder died: the kernel freed its flock
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, (json.dumps(self._record()) + "\n").encode())
            self._fd = fd
            return self
        raise self._busy(None)  # pragma: no cover - a lock file replaced 20 times in a row

    def _check_file(self, st: os.stat_result | None = None) -> None:
        """Refuse a lock path that is not a lock file this library could have made: a
        symbolic link (dangling or not: a lock is never written through a link), or (``st``,
        the opened file's status) anything but a regular file with one name (a hard link
        to a user's file would be overwritten).

        Raises:
            ValueError: naming the lock path and what it is.
        """
        if self.path.is_symlink():
            why = f"a symbolic link (to '{os.readlink(self.path)}')"
        elif st is not None and not stat.S_ISREG(st.st_mode):
            why = "not a regular file"
        elif st is not None and st.st_nlink > 1:
            why = f"a file with {st.st_nlink} names (a hard link)"
        else:
            return
        raise ValueError(
            f"the lock file '{self.path}' of {self.what} '{self.target}' is {why}, not a lock "
            "file of this library, which writes only files it made: remove it, or choose "
            f"another {self.what}"
        )

    def _lock(self, fd: int) -> bool:
        """``flock`` the file; without ``flock`` (another OS, some network file systems) the
        recorded pid decides: a holder that is alive on this host keeps the lock."""
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
            except OSError as err:
                if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        holder = self._read(fd)
        if not holder or holder.get("pid") in (None, os.getpid()):
            return True
        same_host = holder.get("host") == socket.gethostname()
        return same_host and not _pid_alive(int(holder["pid"]))

    def release(self) -> None:
        """Remove the lock file and free the lock (nothing if not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def check_not_busy(target: str | os.PathLike, what: str = "--out") -> None:
    """Refuse a target that another live run holds (an early check before any work; the
    run's own :func:`output_run` takes the lock later).

    Raises:
        OutputBusyError: naming the holder.
    """
    lock = OutputLock(target, what)
    if not os.path.lexists(lock.path):
        return
    lock._check_file()
    try:
        lock.acquire()
    except OutputBusyError:
        raise
    except ValueError:
        return  # an unwritable place: refused with its own message later
    lock.release()


# ---------------------------------------------------------------------------- swapping
def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``);
    ``False`` where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]  # fmt: skip
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False  # an old kernel or a file system without the exchange
    raise OSError(err, f"cannot swap '{a}' and '{b}': {os.strerror(err)}")


def _commit_folder(stage: Path, target: Path, owns: Sequence[str]) -> None:
    """Put the finished ``stage`` in the place of the folder ``target``: entries of
    ``target`` that the command does not own (``owns``: name patterns) and that the new run
    did not write are carried over; the rest of the earlier folder is removed."""
    written = {p.name for p in stage.iterdir()}
    for entry in list(target.iterdir()):
        name = entry.name
        if name in written or is_machinery(name):
            continue
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in owns):
            continue
        os.rename(entry, stage / name)  # a file of the user's: kept
    if not _exchange(stage, target):
        aside = Path(temporary_name(target))
        os.rename(target, aside)
        os.rename(stage, target)
        stage = aside
    shutil.rmtree(stage, ignore_errors=True)  # now the earlier folder


def _commit_files(stage: Path, files: Sequence[Path]) -> None:
    """Move the finished files of ``stage`` into place in the order of ``files``; the last
    one (the completeness marker) is taken away first and placed last, and a file of
    ``files`` that the new run did not write is removed."""
    marker = files[-1]
    aside = None
    if marker.exists():
        aside = Path(temporary_name(marker))
        os.rename(marker, aside)
    for path in files:
        staged = stage / path.name
        if staged.exists():
            os.replace(staged, path)
        elif path is not marker:
            path.unlink(missing_ok=True)
    if aside is not None:
        aside.unlink(missing_ok=True)
    shutil.rmtree(stage, ignore_errors=True)


def _resolve_out(path: str | os.PathLike, what: str = "--out", folder: bool = True) -> Path:
    """The absolute path a run writes for the output ``path``: a symbolic link to an
    existing folder (``folder``) is written through (its target is returned, the link stays);
    any other link is refused, so that nothing is written through a link to a file or to a
    place that does not exist.

    Raises:
        ValueError: ``path`` is a link and not to an existing folder (where ``folder``),
            naming both: a dangling link, a link to a file (a new result would replace the
            link, not its target).
    """
    path = Path(path).expanduser().absolute()
    if not path.is_symlink():
        return path
    real, to = Path(os.path.realpath(path)), os.readlink(path)
    if folder and real.is_dir():
        return real
    if folder:
        why = "does not exist" if not os.path.exists(path) else "is not a folder"
        raise ValueError(
            f"{what} '{path}' is a symbolic link to '{to}', which {why}: results are written "
            "through a link only to an existing folder; create the folder, or give a path "
            f"that is not a link as {what}"
        )
    raise ValueError(
        f"{what} '{path}' is a symbolic link (to '{to}'): a new result would replace the link, "
        f"not the file it points to; give the file itself as {what}"
    )


def _check_reads(reads: Sequence[tuple[str, str | os.PathLike]], target: Path,
                 paths: Sequence[Path] | None, owns: Sequence[str], what: str) -> None:  # fmt: skip
    """Refuse an output that is a file the command reads (see :func:`output_run`)."""
    for option, read in reads:
        source = Path(read).expanduser()
        if not source.is_file():
            continue  # missing inputs are refused by their own checks
        hit = next((p for p in paths or [target] if p.exists() and os.path.samefile(p, source)),
                   None)  # fmt: skip
        if hit is None and paths is None and source.resolve().is_relative_to(target.resolve()):
            first = source.resolve().relative_to(target.resolve()).parts[0]
            if any(fnmatch.fnmatchcase(first, pattern) for pattern in owns):
                hit = target / first
        if hit is not None:
            raise ValueError(
                f"{what} '{target}' would replace {option} '{read}', a file this command reads "
                f"(the same file as '{hit}'); choose another {what}"
            )


def _not_empty(target: Path, what: str, hint: str) -> ValueError:
    entries = sorted(p.name for p in target.iterdir() if not is_machinery(p.name))
    shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
    return ValueError(
        f"{what} '{target}' is not empty (it holds {shown}); pass --overwrite to replace "
        f"its results once the new ones are complete{hint}, or choose another folder"
    )


@contextlib.contextmanager
def output_run(
    out: str | os.PathLike,
    *,
    files: Sequence[str | os.PathLike] | None = None,
    overwrite: bool = False,
    resume: bool = False,
    owns: Sequence[str] = (),
    what: str = "--out",
    resume_hint: bool = False,
    reads: Sequence[tuple[str, str | os.PathLike]] = (),
) -> Iterator[Path]:
    """Hold the lock on ``out`` and give the folder a run writes into (see the module
    docstring).

    Args:
        out: the output folder; or, with ``files``, the run's main file (it names the lock).
        files: a run of files instead of a folder: every file the run writes, in the order
            they are put in place, the completeness marker last (e.g. ``[eval.md,
            eval.json]``); they live in one folder. (default ``None``: ``out`` is a folder)
        overwrite: replace an earlier result (default ``False``: refuse a non-empty folder,
            or files that exist).
        resume: write in place into a non-empty folder (the command continues its run).
        owns: name patterns of the entries the command writes into a folder (an earlier
            result's, removed when replaced; other entries are kept).
        what: how messages name ``out``.
        resume_hint: name ``--resume`` in the refusal of a non-empty folder.
        reads: the files the command reads, as ``(option, path)`` pairs: a run that would
            replace or remove one is refused (the same file as ``out`` or one of ``files``,
            hard links included; an entry of the folder ``out`` that it owns).

    Yields:
        The folder to write the outputs into: ``out`` itself (or, for files, their folder)
        when nothing is there yet (or with ``resume``), else a staging folder whose content
        replaces the earlier result when the block ends normally.

    A folder ``out`` that is a symbolic link to an existing folder is written through: the
    results land in the folder it points to, and the link stays as it is; any other link
    is refused.

    Raises:
        OutputBusyError: another run holds the lock (before anything is written).
        ValueError: a non-empty folder or existing files without ``overwrite``; a folder
            where a file is expected or the other way round; an unwritable place; one of
            ``files`` that is a symbolic link, or ``out`` a dangling one; a lock file that is
            a link or not this library's.
    """
    paths = None if files is None else [_resolve_out(f, what, folder=False) for f in files]
    target = _resolve_out(out, what, folder=paths is None)
    _check_reads(reads, target, paths, owns, what)
    lock = OutputLock(target, what).acquire()
    try:
        folder = target.parent if paths is not None else target
        hint = ", or --resume to continue the run there" if resume_hint else ""
        if paths is not None:
            for path in paths:
                if path.is_dir():
                    raise ValueError(f"{what} '{path}' is a folder, expected a file")
            existing = [p for p in paths if p.exists()]
            fresh = not existing
            if existing and not overwrite:
                raise ValueError(
                    f"'{existing[0]}' already exists; pass --overwrite to replace it once the "
                    "new result is complete, or choose another " + what
                )
        else:
            if target.exists() and not target.is_dir():
                raise ValueError(
                    f"{what} '{target}' is a file, expected a folder; choose another {what}"
                )
            fresh = not target.exists() or is_empty_folder(target)
            if not fresh and not (overwrite or resume):
                raise _not_empty(target, what, hint)
            if not fresh and not resume and Path.cwd().resolve().is_relative_to(target.resolve()):
                raise ValueError(
                    f"{what} '{target}' holds the current folder; --overwrite replaces the "
                    f"whole folder once the new result is complete: choose a subfolder as {what}"
                )
        check_output_dir(folder, what)  # made, writable; stale temporaries removed
        if paths is None:  # killed runs' staging folders beside it
            remove_stale_temporaries(folder.parent)
        if fresh or resume:
            yield folder
            return
        stage = Path(temporary_name(target))
        stage.mkdir()
        try:
            yield stage
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        if paths is not None:
            _commit_files(stage, paths)
        else:
            _commit_folder(stage, target, owns)
    finally:
        lock.release()
