"""A user's folder or archive read without a byte of it written: a private copy to work on
(``copy_tree``), and an archive's members checked before anything is unpacked
(``check_archive``).

``copy_tree(source, target)`` copies the folder ``source`` into the new folder ``target``:

- every file is opened read-only (``O_RDONLY``, and ``O_NOFOLLOW`` for an entry that is not
  a link), and its bytes are copied; holes stay holes (``SEEK_DATA``/``SEEK_HOLE`` where the
  file system has them, else blocks of zeros are skipped), so a sparse file is as sparse in
  the copy (a 32 MB write-ahead log holding 4 KB stays 4 KB on disk);
- a symbolic link is never copied as a link (the copy would write through it into the
  user's files): the bytes of what it points to are copied in its place, a folder it points
  to is copied as a folder; a link that leads back into a folder being copied (a loop) or
  to nothing is an InputError naming the link;
- a named pipe, socket or device is an InputError naming it (opening a pipe blocks);
- at most ``MAX_ENTRIES`` entries, or an InputError with the count.

``check_archive(path, limit)`` reads a tar archive's headers (and those of tar archives
inside it) and refuses, before a byte is unpacked: a member that is a link, a device, a
pipe or a path outside the archive's folder (absolute, or with ``..``); more than
``MAX_ENTRIES`` members; and declared sizes adding up past ``limit`` (a sparse member counts
its full declared size: 200 GB declared in a 266 KB archive is refused at once). The default
limit is ``UNPACK_RATIO`` times the archive's size, at most ``UNPACK_CAP``. Member names are
normalised before they are checked (``normal_name``: ``\\`` as ``/``, ``./`` and empty parts
and trailing slashes dropped), so what an engine restores is what was checked: a member
``segments/<uuid>.tar/`` is the nested archive ``segments/<uuid>.tar``; two members of one
normalised name, or a folder entry that carries data, are refused.
"""

from __future__ import annotations

import errno
import os
import stat
import tarfile
from dataclasses import dataclass
from typing import IO

from ragspan.base.bounds import (
    MAX_ARCHIVE_ENTRIES,
    MAX_ARCHIVE_NESTING,
    UNPACK_CAP,
    UNPACK_RATIO,
)
from ragspan.base.errors import InputError

MAX_ENTRIES = MAX_ARCHIVE_ENTRIES
MAX_NESTING = MAX_ARCHIVE_NESTING  # archives inside archives (a snapshot's segments: one)

BLOCK = 1 << 20
_SPECIAL = {stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket",
            stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


@dataclass
class _Walk:
    """What one copy has done: entries copied, the folders open on the way down (their
    device and inode, to tell a loop), the root named in errors."""

    root: str
    entries: int = 0
    sparse: int = 0
    open_dirs: tuple[tuple[int, int], ...] = ()


def copy_tree(source: str, target: str) -> int:
    """Copy the folder ``source`` to ``target`` (which must not exist) as the module
    docstring says; returns how many files were copied with holes kept."""
    walk = _Walk(source)
    st = os.stat(source)
    walk.open_dirs = ((st.st_dev, st.st_ino),)
    os.mkdir(target)
    _copy_dir(source, target, walk)
    return walk.sparse


def _copy_dir(folder: str, target: str, walk: _Walk) -> None:
    with os.scandir(folder) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        walk.entries += 1
        if walk.entries > MAX_ENTRIES:
            raise InputError(f"more than {MAX_ENTRIES:,} files and folders", walk.root)
        src, dst = entry.path, os.path.join(target, entry.name)
        linked = entry.is_symlink()
        try:
            st = os.stat(src) if linked else os.lstat(src)
        except OSError:
            raise InputError(f"'{_rel(src, walk)}' is a link to nothing (it points at "
                             f"'{os.readlink(src)}')", walk.root) from None
        kind = stat.S_IFMT(st.st_mode)
        if kind in _SPECIAL:
            raise InputError(f"'{_rel(src, walk)}' is {_SPECIAL[kind]}, not a file: it cannot "
                             "be copied to be read (nothing was opened)", walk.root)
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in walk.open_dirs:
                raise InputError(f"'{_rel(src, walk)}' links back into a folder it is in (a "
                                 "loop)", walk.root)
            os.mkdir(dst)
            outer = walk.open_dirs
            walk.open_dirs = (*outer, key)
            _copy_dir(src, dst, walk)
            walk.open_dirs = outer
        elif stat.S_ISREG(st.st_mode):
            walk.sparse += _copy_file(src, dst, follow=linked, walk=walk)
        else:
            raise InputError(f"'{_rel(src, walk)}' is neither a file nor a folder", walk.root)


def _rel(path: str, walk: _Walk) -> str:
    return os.path.relpath(path, walk.root)


def _copy_file(src: str, dst: str, *, follow: bool, walk: _Walk) -> bool:
    """Copy one regular file, holes kept; True when it had holes."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(src, flags)
    except OSError as exc:
        raise InputError(f"'{_rel(src, walk)}' cannot be read: {exc.strerror}",
                         walk.root) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since it was listed
            raise InputError(f"'{_rel(src, walk)}' is no longer a regular file", walk.root)
        with open(dst, "xb") as out:
            holes = _copy_data(fd, out, st.st_size)
            out.truncate(st.st_size)
        return holes
    finally:
        os.close(fd)


def _copy_data(fd: int, out: IO[bytes], size: int) -> bool:
    """The data of ``fd`` written at the same offsets of ``out``; holes skipped. True when
    the file had a hole."""
    try:
        return _copy_extents(fd, out, size)
    except OSError as exc:  # no SEEK_DATA on this file system: skip blocks of zeros
        if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
    holes = False
    os.lseek(fd, 0, os.SEEK_SET)
    offset = 0
    while True:
        block = os.read(fd, BLOCK)
        if not block:
            return holes
        if block.count(0) == len(block):
            holes = True
        else:
            out.seek(offset)
            out.write(block)
        offset += len(block)


def _copy_extents(fd: int, out: IO[bytes], size: int) -> bool:
    holes = False
    offset = 0
    while offset < size:
        try:
            data = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                return True
            raise
        holes = holes or data > offset
        end = os.lseek(fd, data, os.SEEK_HOLE)
        os.lseek(fd, data, os.SEEK_SET)
        out.seek(data)
        left = end - data
        while left > 0:
            block = os.read(fd, min(BLOCK, left))
            if not block:
                return holes
            out.write(block)
            left -= len(block)
        offset = end
    return holes


@dataclass(frozen=True)
class ArchiveFacts:
    """What ``check_archive`` read of an archive: its members, their declared bytes, the
    limit they were held to, and the shards of a collection snapshot (its top-level
    numbered folders holding ``segments``; none for one shard's snapshot)."""

    members: int
    declared_bytes: int
    limit: int
    shards: tuple[str, ...] = ()


def default_limit(path: str) -> int:
    """``UNPACK_RATIO`` times the archive's size, at most ``UNPACK_CAP``."""
    return min(UNPACK_RATIO * os.path.getsize(path), UNPACK_CAP)


def check_archive(path: str, limit: int | None = None) -> ArchiveFacts:
    """The tar archive ``path`` vetted as the module docstring says (an InputError naming
    it, with the counts, when it is refused)."""
    bound = _Bound(default_limit(path), "the default: " f"{UNPACK_RATIO}x the archive, at "
                   f"most {UNPACK_CAP:,}; --max-unpacked-bytes raises it") if limit is None \
        else _Bound(limit, "--max-unpacked-bytes")
    shards: set[str] = set()
    try:
        with tarfile.open(path, "r:") as tar:
            members, declared = _members(tar, path, bound, "", 0, 0, shards)
    except tarfile.TarError as exc:
        raise InputError(f"not a tar archive: {exc}", path) from None
    except EOFError:
        raise InputError("the archive ends inside a member (truncated)", path) from None
    return ArchiveFacts(members, declared, bound.bytes,
                        tuple(sorted(shards, key=lambda x: (len(x), x))))


@dataclass(frozen=True)
class _Bound:
    bytes: int
    said: str


def _bounded(declared: int, bound: _Bound, name: str, m: tarfile.TarInfo, path: str) -> None:
    if declared > bound.bytes:
        raise InputError(f"its members declare {declared:,} bytes unpacked (member "
                         f"'{name}' {m.size:,}{', sparse' if m.issparse() else ''}), past "
                         f"the limit of {bound.bytes:,} bytes ({bound.said})", path)


def _nested(tar: tarfile.TarFile, m: tarfile.TarInfo, path: str, bound: _Bound, inside: str,
            count: int, declared: int) -> tuple[int, int] | None:
    """The counts after the members of the archive ``m`` (read as a stream, checked as
    the outer ones are); None when ``m`` is a file named .tar that is no archive."""
    if inside.count(".tar/") > MAX_NESTING:
        raise InputError(f"member '{inside[:-1]}' nests archives more than {MAX_NESTING} deep",
                         path)
    inner = tar.extractfile(m)
    if inner is None:
        return None
    try:
        with tarfile.open(fileobj=inner, mode="r|") as nested:
            return _members(nested, path, bound, inside, count, declared)
    except tarfile.ReadError:
        return None


def normal_name(name: str) -> str:
    """A member name as an unpacker resolves it: ``\\`` as ``/``, and ``.``, empty parts and
    trailing slashes dropped (``./segments//x.tar/`` is ``segments/x.tar``)."""
    return "/".join(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))


def _members(tar: tarfile.TarFile, path: str, bound: _Bound, inside: str, count: int,
             declared: int, shards: set[str] | None = None) -> tuple[int, int]:
    seen: set[str] = set()
    for m in tar:
        count += 1
        raw = m.name.replace("\\", "/")
        clean = normal_name(m.name)
        name = f"{inside}{clean}"
        parts = clean.split("/")
        if shards is not None and len(parts) > 1 and parts[0].isdigit() \
                and parts[1] == "segments":
            shards.add(parts[0])
        if count > MAX_ENTRIES:
            raise InputError(f"more than {MAX_ENTRIES:,} members", path)
        if raw.startswith("/") or ".." in parts:
            raise InputError(f"member '{inside}{m.name}' points outside the archive's folder",
                             path)
        if clean in seen and not m.isdir():
            raise InputError(f"member '{name}' appears twice (names normalised): what is "
                             "unpacked would not be what was checked", path)
        seen.add(clean)
        if m.islnk() or m.issym():
            raise InputError(f"member '{name}' is a link (to '{m.linkname}'): a snapshot "
                             "holds files and folders only", path)
        if not (m.isreg() or m.isdir()):
            raise InputError(f"member '{name}' is a device, pipe or other special file: a "
                             "snapshot holds files and folders only", path)
        if m.isdir() and m.size:
            raise InputError(f"member '{name}' is a folder entry that carries {m.size:,} "
                             "bytes: a snapshot's folders hold no data", path)
        if m.isreg() and clean.endswith(".tar"):
            nested = _nested(tar, m, path, bound, f"{name}/", count, declared)
            if nested is not None:  # an archive inside: what its members declare counts
                count, declared = nested
                continue
        declared += m.size
        _bounded(declared, bound, name, m, path)
    return count, declared
