"""Writing outputs so that they never destroy anything.

* ``check_outputs`` runs before a command does any work: an output that is one of the
  command's inputs (the same file, by device and inode, so links and ``./`` spellings are
  caught), or any path inside an input folder (an existing file or a new one: ``--out
  docs/report.json`` would add a document to the corpus ``docs`` it scored), is a usage
  error (exit 2); an output that is a directory, a special file (FIFO, device, socket) or
  lies in a missing folder is an input error (exit 3). Two outputs naming one file are a
  usage error.
* ``write_files`` writes every output of a command or none: each is staged as a temporary
  file beside its target, then all are renamed into place; if a rename fails, the targets
  already replaced get their old contents back. Written files get the mode a plain
  ``open()`` would give them (``0o666`` less the umask), not the temporary file's ``0600``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping

from ragspan.base.errors import InputError, UsageError


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _input_identities(inputs: Iterable[str]) -> dict[tuple[int, int], str]:
    """(device, inode) of every input file, and of every file under an input folder."""
    found: dict[tuple[int, int], str] = {}
    for path in inputs:
        if os.path.isdir(path):
            for root, _dirs, files in os.walk(path):
                for f in files:
                    full = os.path.join(root, f)
                    key = _identity(full)
                    if key is not None:
                        found.setdefault(key, full)
            continue
        key = _identity(path)
        if key is not None:
            found.setdefault(key, path)
    return found


def check_outputs(outputs: Mapping[str, str | None], inputs: Iterable[str | None]) -> None:
    """Refuse, before any work, outputs that would destroy an input or cannot be written.

    ``outputs`` maps each option (``--out``) to its path or None; ``inputs`` are the paths
    the command reads (files or folders; None entries are skipped)."""
    given = {opt: p for opt, p in outputs.items() if p}
    if not given:
        return
    in_paths = [str(p) for p in inputs if p]
    ids = _input_identities(in_paths)
    folders = [(p, os.path.realpath(p)) for p in in_paths if os.path.isdir(p)]
    seen: dict[str, str] = {}
    for opt, path in given.items():
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{opt} {path} and {seen[real]} name the same file")
        seen[real] = opt
        key = _identity(path)
        if key is not None and key in ids:
            raise UsageError(f"{opt} {path} is an input of this command ({ids[key]}); "
                             "refusing to overwrite it")
        for folder, real_folder in folders:
            if os.path.commonpath([real, real_folder]) == real_folder:
                raise UsageError(f"{opt} {path} is inside the input folder {folder}; refusing "
                                 "to write into what this command reads (write it elsewhere)")
        _check_writable(path)


def _check_writable(path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, expected a file to write", path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("is not a regular file (a device, FIFO or socket); refusing to "
                             "write to it", path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError("output folder does not exist", path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError("output folder is not writable", path)


def current_umask() -> int:
    """The process's umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_files(files: Mapping[str, str | bytes]) -> None:
    """Write every file (text as UTF-8, no newline translation) or none of them."""
    if not files:
        return
    for path in files:
        _check_writable(path)
    mode = 0o666 & ~current_umask()
    staged: list[tuple[str, str]] = []
    replaced: list[tuple[str, str | None]] = []  # (target, backup of its old contents)
    try:
        for path, content in files.items():
            folder = os.path.dirname(os.path.abspath(path))
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                       dir=folder)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
            os.chmod(tmp, mode)
        for tmp, path in staged:
            backup = None
            if os.path.exists(path):
                backup = tmp + ".old"
                os.link(path, backup)
            os.replace(tmp, path)
            replaced.append((path, backup))
    except BaseException as exc:
        for path, backup in reversed(replaced):
            with contextlib.suppress(OSError):
                if backup is None:
                    os.unlink(path)
                else:
                    os.replace(backup, path)
        for tmp, _ in staged:
            for leftover in (tmp, tmp + ".old"):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
        if not isinstance(exc, OSError):
            raise
        failed = staged[len(replaced)][1] if len(replaced) < len(staged) else next(iter(files))
        raise InputError(f"cannot write: {exc.strerror or exc}", failed) from None
    for _path, backup in replaced:
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)
