"""The library's one file layer: every file it writes or checks goes through here.

- **Atomic writes.** :func:`atomic_write` calls a writer on a hidden temporary beside the
  target and ``os.replace``-s it: an interrupted write never leaves a partial file.
  :func:`atomic_torch_save`, :func:`write_text`, :func:`write_json` and :func:`write_csv`
  are built on it.
- **Temporaries.** A temporary is named ``.<name>.<pid>.<uuid>.topo_contrastive.tmp``
  (:func:`temporary_name`); those of dead processes are removed by
  :func:`remove_stale_temporaries` (datasets on open, :func:`check_output_dir`), and
  nothing else: a user's hidden entry of a similar name is left alone.
- **Reading.** :func:`sha256_of` digests a file; :func:`read_npz` reads an ``.npz`` archive
  with ``allow_pickle=False`` and turns every way it can fail into a ``ValueError`` naming
  the file.
- **Output folders and completeness.** :func:`check_output_dir` checks a folder before any
  work. A run whose outputs are rewritten as it goes (``search``, ``pretrain``,
  ``reproduce``) first removes a stale completeness marker (and its own previous outputs),
  writes its progress with ``"complete": false``, and writes the marker last
  (:func:`begin_outputs`, :func:`mark_complete`): an interrupted or killed run never looks
  complete.

This module imports nothing else from the package, and neither ``torch`` nor ``numpy`` until
a function needs them.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import math
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Name of the marker file written last into a finished output folder.
COMPLETE_MARKER = "COMPLETE"

# The library's temporaries (atomic_write's files, the commands' staging folders, the ocean
# download folder) are named ``.<name>.<pid>.<32 hex>.topo_contrastive.tmp``: the fixed tag
# is what tells them from a user's hidden entry of a similar shape (``.photos.99.keep.tmp``),
# which is never removed. Leftovers of the earlier format (``.<name>.<pid>.<32 hex>.tmp``
# files, ``.download.<pid>.<8 chars>.tmp`` folders) are removed only where asked
# (``legacy=True``: a dataset's own raw/ and processed/ folders, which hold nothing else).
_TAG = "topo_contrastive"
_TEMPORARY = re.compile(r"^\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{32}\." + _TAG + r"\.tmp$")
_LEGACY = re.compile(r"^\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{32}\.tmp$")
_LEGACY_DOWNLOAD = re.compile(r"^\.download\.(?P<pid>[0-9]+)\.[a-z0-9_]{8}\.tmp$")
# a temporary is only removed once unmodified for this long (a writer in another pid
# namespace, e.g. a container sharing the folder, may look dead here)
_STALE_MIN_AGE_S = 10.0


# ---------------------------------------------------------------------------- temporaries
def temporary_name(target: str | os.PathLike, pid: int | None = None) -> str:
    """Path of a fresh temporary beside ``target``:
    ``.<name>.<pid>.<uuid>.topo_contrastive.tmp`` (the tag marks it as this library's).

    Args:
        target (str or os.PathLike): the file or folder the temporary will replace.
        pid (int, optional): the process id in the name. (default: this process's)
    """
    pid = os.getpid() if pid is None else pid
    folder, name = os.path.split(os.path.abspath(target))
    return os.path.join(folder, f".{name}.{pid}.{uuid.uuid4().hex}.{_TAG}.tmp")


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (conservative: ``True`` if unsure)."""
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, under another user
        return True
    return True


def _stale_pid(entry: os.DirEntry, legacy: bool) -> int | None:
    """The pid in the name of ``entry`` if it is one of this library's temporaries."""
    match = _TEMPORARY.match(entry.name)
    if match is None and legacy and not entry.is_symlink():
        old = _LEGACY_DOWNLOAD if entry.is_dir(follow_symlinks=False) else _LEGACY
        match = old.match(entry.name)
    return None if match is None else int(match["pid"])


def remove_stale_temporaries(folder: str | os.PathLike, legacy: bool = False) -> list[str]:
    """Remove the temporaries of dead processes from ``folder`` (not recursive).

    A temporary is an entry this library made (:func:`temporary_name`: the tag
    ``topo_contrastive`` in its name); it is stale when no process ``pid`` exists on this
    machine and it has not been modified for 10 s. Every other entry (a user's
    ``.photos.99.keep.tmp`` included) is left alone; a link is removed, never followed; a
    missing or unreadable folder is ignored.

    Args:
        folder: the folder.
        legacy: also remove the earlier versions' leftovers (``.<name>.<pid>.<32 hex>.tmp``
            files, ``.download.<pid>.<8 chars>.tmp`` folders), in a folder that holds only
            the library's files (a dataset's ``raw/``, ``processed/``). (default: ``False``)

    Returns:
        The paths removed.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    removed = []
    now = time.time()
    for entry in entries:
        try:
            pid = _stale_pid(entry, legacy)
            if pid is None or _pid_alive(pid):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < _STALE_MIN_AGE_S:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.remove(entry.path)
        except OSError:  # removed meanwhile, or a read-only folder
            continue
        removed.append(entry.path)
    return removed


# ---------------------------------------------------------------------------- write errors
def write_problem(code: int | None, path: str | os.PathLike, detail: str | None = None) -> str:
    """What a failed write of ``path`` with the ``errno`` ``code`` means, in words: a full
    disk (``"no space left on device writing '<path>'"``), an exceeded quota, a read-only
    folder (a read-only file system, or one this user may not write); else ``detail`` (the
    system's words)."""
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if code == errno.ENOSPC:
        return f"no space left on device writing '{target}'"
    if code == getattr(errno, "EDQUOT", None):
        return f"disk quota exceeded writing '{target}'"
    if code == errno.EROFS:
        return (f"cannot write '{target}': the folder '{folder}' is read-only (a read-only "
                "file system)")  # fmt: skip
    if code in (errno.EACCES, errno.EPERM):
        return (f"cannot write '{target}': the folder '{folder}' is read-only for this user "
                "(permission denied)")  # fmt: skip
    if code == errno.EISDIR:
        return f"cannot write '{target}': it is a folder, expected a file path"
    return f"cannot write '{target}' ({detail or os.strerror(code or 0)})"


def describe_os_error(err: OSError) -> str:
    """``err`` in words for a command-line message: the message :func:`atomic_write` gave it;
    a full disk, an exceeded quota or a read-only file system (errors only a write gives) in
    the words of :func:`write_problem`, naming the file where ``err`` does; else its own
    text."""
    if getattr(err, "described", False):
        return str(err.strerror)
    if err.errno in _WRITE_CODES:
        name = err.filename2 if err.filename2 is not None else err.filename
        if name is not None:
            return write_problem(err.errno, name, err.strerror)
        words = {errno.ENOSPC: "no space left on device", errno.EROFS: "a read-only file system"}
        return words.get(err.errno, "disk quota exceeded")
    return str(err)


#: errno values that only a write gives (a full disk, a quota, a read-only file system)
_WRITE_CODES = {errno.ENOSPC, errno.EROFS, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _described(err: OSError, target: str) -> OSError:
    """An error of ``err``'s type and ``errno`` whose message names ``target`` (not the hidden
    temporary) and says what went wrong (:func:`write_problem`)."""
    new = type(err)(
        err.errno,
        write_problem(err.errno, target, err.strerror) + "; an earlier file there is unchanged",
    )
    new.described = True  # type: ignore[attr-defined]
    return new


# ---------------------------------------------------------------------------- atomic writes
def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, then ``os.replace`` it.

    A failure at any point (an exception, including ``KeyboardInterrupt``) leaves neither a
    partial ``path`` nor the temporary file; a process killed outright leaves its hidden
    temporary (:func:`temporary_name`), which :func:`remove_stale_temporaries` removes
    later. The file gets the usual permissions (umask), unlike ``tempfile.mkstemp``.

    Args:
        path (str or os.PathLike): the file to write.
        write (Callable[[str], None]): writes the whole content to the path it is given.

    Raises:
        FileNotFoundError: the folder of ``path`` does not exist (or is not a folder).
        IsADirectoryError: ``path`` is a folder.
        OSError: the write failed; of the system's type and ``errno`` (``ENOSPC``, ``EROFS``,
            ``EACCES``, ...), its message naming ``path`` and what happened: ``"no space left
            on device writing '<path>'"``, ``"... the folder '<folder>' is read-only ..."``.
    """
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            errno.ENOENT,
            f"cannot write '{target}': its folder '{folder}' "
            + ("is not a folder" if os.path.exists(folder) else "does not exist"),
        )
    if os.path.isdir(target):
        raise _described(IsADirectoryError(errno.EISDIR, "Is a directory"), target)
    tmp = temporary_name(target)
    try:
        with open(tmp, "xb"):
            pass
        write(tmp)
        os.replace(tmp, target)
    except BaseException as err:
        if os.path.lexists(tmp):
            os.remove(tmp)
        fresh = not getattr(err, "described", False)
        if isinstance(err, OSError) and err.errno is not None and fresh:
            # the same error type (ENOSPC, EACCES, ...), naming the file instead of the
            # hidden temporary; the earlier file at ``target``, if any, is unchanged
            raise _described(err, target) from err
        raise


class _WriteRecorder:
    """A binary file for ``torch.save`` that keeps the first ``OSError`` of its writes:
    ``torch.save`` turns a failed write into a ``RuntimeError`` of its own ("enforce fail at
    inline_container.cc") that no longer says why."""

    def __init__(self, file: Any) -> None:
        self.file, self.error = file, None

    def write(self, data: Any) -> int:
        try:
            return self.file.write(data)
        except OSError as err:
            self.error = self.error or err
            raise

    def flush(self) -> None:
        self.file.flush()


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save(obj, path)`` atomically (see :func:`atomic_write`); a failed write (a full
    disk) raises the system's ``OSError``, as every other write does, not torch's
    ``RuntimeError``."""
    import torch

    def _write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            sink = _WriteRecorder(f)
            try:
                torch.save(obj, sink)
            except RuntimeError as err:
                if sink.error is not None:
                    raise sink.error from err
                raise

    atomic_write(path, _write)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) atomically."""

    def _write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    atomic_write(path, _write)


def _clean(obj: Any, where: str = "obj") -> Any:
    """JSON-ready copy: NaN/inf become ``None``, tuples lists, numpy / torch arrays and
    scalars their ``tolist()``; ``where`` names ``obj`` in the error.

    Raises:
        TypeError: a value JSON cannot hold (a set, a path, any other object), named by its
            place (``obj['key'][0]``) and type.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, dict):
        return {str(k): _clean(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if callable(getattr(obj, "tolist", None)):  # numpy / torch arrays and scalars
        value = obj.detach().cpu() if callable(getattr(obj, "detach", None)) else obj
        return _clean(value.tolist(), where)
    raise TypeError(
        f"`{where}` is a {type(obj).__name__}, which JSON cannot hold: give numbers, strings, "
        "None, lists, tuples, dicts, numpy arrays or torch tensors"
    )


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically: NaN and inf written as ``null``, numpy
    arrays and torch tensors (any device, with or without gradients) as nested lists.

    Raises:
        TypeError: ``obj`` holds a value JSON cannot hold (the message names its place and
            type); nothing is written then.
    """
    write_text(path, json.dumps(_clean(obj), indent=2) + "\n")


def write_csv(path: str | os.PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts; the union of their keys is the header, in first-seen order)
    atomically; ``None`` is written empty, a list or tuple as its items joined by spaces."""
    fields: list[str] = []
    for row in rows:
        for key in row:
            if key not in fields:
                fields.append(key)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: (
                    ""
                    if v is None
                    else (" ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
                )
                for k, v in row.items()
            }
        )
    write_text(path, buf.getvalue())


# ---------------------------------------------------------------------------- reading
def require_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a ``Path`` if it is an existing file.

    Args:
        path: the file.
        what: how messages name it (e.g. ``"checkpoint"``, ``"data file"``).

    Raises:
        ValueError: ``path`` is a folder (``"<what> '<path>' is a folder, expected a file"``)
            or something else that is not a regular file (a device such as ``/dev/null``, a
            pipe, a socket).
        FileNotFoundError: nothing exists at ``path``.
    """
    file = Path(path).expanduser()
    if file.is_dir():
        raise ValueError(f"{what} '{path}' is a folder, expected a file")
    if not file.is_file():
        if file.exists():
            raise ValueError(
                f"{what} '{path}' is not a regular file (a device, pipe or socket), expected a "
                "file"
            )
        raise FileNotFoundError(f"{what} '{path}' does not exist")
    return file


def sha256_of(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 digest of a file, read in chunks of ``chunk_size`` bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def read_npz(path: str | os.PathLike, what: str = "an .npz archive") -> dict[str, Any]:
    """Read every array of an ``.npz`` archive with ``allow_pickle=False``.

    Args:
        path (str or os.PathLike): the archive.
        what (str): what the file should be, for the messages, e.g. ``"an edge-flow file"``.
            (default: ``"an .npz archive"``)

    Returns:
        ``{key: numpy.ndarray}``, in the archive's order.

    The sizes the archive declares are checked before anything is allocated (a zip bomb, a
    few kB that would expand to GiB, is refused at once): every member may expand at most
    1100 times (numpy's ``savez_compressed`` writes deflate, which cannot exceed 1032 times;
    1 MiB per member is always allowed), an ``.npy`` header may not declare more data than
    its member holds, and the arrays together must fit the memory this process may use
    (the machine's physical memory, or a lower ``RLIMIT_AS`` / ``RLIMIT_DATA``).

    Raises:
        ValueError: naming ``path`` and ``what``: a missing file or a folder; a file that is
            not an ``.npz`` archive, or a truncated or corrupted one (``BadZipFile``,
            ``zlib.error``, ``EOFError``, ``OSError``); declared sizes beyond the limits
            above (naming the member and its sizes); an archive that holds Python objects.
    """
    import zipfile
    import zlib

    import numpy as np

    broken = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)
    if os.path.isdir(path):
        raise ValueError(f"'{path}' is a folder, expected {what} (an .npz file)")
    try:
        archive = np.load(path, allow_pickle=False)
    except broken as err:  # missing, not a zip archive, a pickle, truncated
        raise _unreadable(path, what, err) from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"'{path}' holds a single .npy array, not {what} (an .npz archive)")
    with archive:
        _check_declared_sizes(archive.zip, path, what, broken)  # before any allocation
        try:
            return {k: archive[k] for k in archive.files}
        except ValueError as err:  # object arrays
            raise ValueError(
                f"'{path}' holds Python objects ({err}); store numbers and strings only"
            ) from err
        except broken as err:  # a corrupted member
            raise _unreadable(path, what, err) from err


# how much a member of an .npz archive may expand (deflate's bound is 1032x), and the
# uncompressed size always allowed per member
_MAX_EXPANSION, _FREE_BYTES = 1100, 1 << 20


def _memory_limit() -> int:
    """Bytes this process may allocate at most: the physical memory, or a lower soft
    ``RLIMIT_AS`` / ``RLIMIT_DATA`` (a memory cap); ``2**62`` where neither is known."""
    limits = [1 << 62]
    try:
        import resource

        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        limits += [resource.getrlimit(k)[0] for k in (resource.RLIMIT_AS, resource.RLIMIT_DATA)]
    except (ImportError, ValueError, OSError, AttributeError):  # not POSIX
        pass
    return min(v for v in limits if v >= 0)  # RLIM_INFINITY is -1


def _check_declared_sizes(archive: Any, path: str | os.PathLike, what: str,
                          broken: tuple[type[BaseException], ...]) -> None:  # fmt: skip
    """Check the sizes ``archive`` (an open ``zipfile.ZipFile``) declares against the limits
    of :func:`read_npz`, reading only the ``.npy`` headers."""
    import numpy as np

    total, limit, size = 0, _memory_limit(), os.path.getsize(path)
    for info in archive.infolist():
        member, data = f"'{path}' member '{info.filename}'", info.file_size
        if info.compress_size > size or data > _MAX_EXPANSION * info.compress_size + _FREE_BYTES:
            raise ValueError(
                f"{member} declares {data} bytes from {info.compress_size} compressed bytes in "
                f"a file of {size}: more than an .npz member can expand (a zip bomb or a "
                f"corrupted file); expected {what}"
            )
        if info.filename.endswith(".npy"):
            try:
                with archive.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)  # fmt: skip
                    shape, _, dtype = read(f)
                    data, held = math.prod(shape) * dtype.itemsize, info.file_size - f.tell()
            except broken as err:
                raise _unreadable(path, what, err) from err
            if data > held:
                raise ValueError(
                    f"{member} declares an array {tuple(shape)} of {dtype} ({data} bytes) but "
                    f"holds {held} bytes of data: a corrupted file; expected {what}"
                )
        total += data
        if total > limit:
            raise ValueError(
                f"'{path}' declares arrays of {total / 2**30:.2f} GiB (up to member "
                f"'{info.filename}'), more than the {limit / 2**30:.2f} GiB of memory this "
                f"process may use; expected {what}"
            )


def _unreadable(path: str | os.PathLike, what: str, err: BaseException) -> ValueError:
    return ValueError(
        f"'{path}' is not a readable .npz file ({type(err).__name__}: {err}); expected {what}"
    )


# ---------------------------------------------------------------------------- output folders
def check_output_dir(path: str | os.PathLike, what: str = "--out") -> Path:
    """Create ``path`` if needed and check that files can be written there.

    Temporaries left there by a killed process (see :func:`remove_stale_temporaries`) are
    removed.

    Args:
        path (str or os.PathLike): the folder.
        what (str): how the messages name it. (default: ``"--out"``)

    Returns:
        The folder as an absolute :class:`~pathlib.Path`.

    Raises:
        ValueError: the folder cannot be created (e.g. a parent is a regular file) or written.
    """
    folder = Path(path).expanduser().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}-{uuid.uuid4().hex}"
        with open(probe, "xb"):
            pass
        probe.unlink()
    except OSError as err:
        words = {
            errno.ENOSPC: "no space left on device",
            errno.EROFS: "the folder is read-only, a read-only file system",
            errno.EACCES: "the folder is read-only for this user, permission denied",
        }
        why = words.get(err.errno, f"{type(err).__name__}: {err.strerror or err}")
        raise ValueError(
            f"the output folder {what} '{folder}' cannot be written ({why}); choose a "
            "writable folder"
        ) from err
    remove_stale_temporaries(folder)
    return folder


def check_output_possible(path: str | os.PathLike, what: str = "--out") -> None:
    """Check, without creating anything, that the folder ``path`` could be made and written:
    an existing folder is checked by :func:`check_output_dir`; else its nearest existing
    ancestor must be a writable folder. Lets a command refuse an unwritable ``--out`` before
    any work and still leave nothing behind when its input is refused next.

    Raises:
        ValueError: as :func:`check_output_dir` (``"... cannot be written ..."``).
    """
    folder = Path(path).expanduser().absolute()
    if folder.exists():
        check_output_dir(folder, what)
        return
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        why = "is not a folder" if not parent.is_dir() else "is not writable"
        raise ValueError(
            f"the output folder {what} '{folder}' cannot be written ('{parent}' {why}); "
            "choose a writable folder"
        )


def marker_beside(path: str | os.PathLike) -> Path:
    """The completeness marker of a single output file: ``<path>.COMPLETE`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.{COMPLETE_MARKER}")


def begin_outputs(marker: str | os.PathLike, stale: Sequence[str | os.PathLike] = ()) -> None:
    """Before a run's work: remove a stale completeness ``marker``, then the files ``stale``
    (the run's outputs from an earlier run, which it will rewrite), so that the folder never
    mixes an old result with a new, unfinished one."""
    Path(marker).unlink(missing_ok=True)
    for path in stale:
        Path(path).unlink(missing_ok=True)


def mark_complete(marker: str | os.PathLike, message: str) -> None:
    """Write the completeness ``marker`` (one line, ``message``): the last write of a run."""
    write_text(marker, message.rstrip("\n") + "\n")
