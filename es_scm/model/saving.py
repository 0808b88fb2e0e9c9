"""A folder replaced in one step: after a crash at any point it holds the old files or the new.

:func:`replace_folder` writes the new files into a staging folder beside the target
(``.<name>.saving-<pid>-<random>``), flushes every file and the folder to disk, then puts it in
the target's place:

* no target yet: one ``rename``;
* on Linux: one ``renameat2(RENAME_EXCHANGE)``, which swaps the two names at once, so the target
  always names a complete folder; the old one, now under the staging name, is then deleted;
* elsewhere (or on a file system without the exchange): the target is renamed aside
  (``.<name>.old-<pid>-<random>``), then the staging folder into its place. A process killed
  between the two leaves no target; :func:`restore_interrupted_save`, which every load and save
  calls first, renames the old folder back.

Until the new folder is complete and flushed, the old one is untouched. A staging or aside
folder whose process is gone (killed mid-save) is deleted by the next save of the same target;
loads never read one.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Collection
from pathlib import Path

from es_scm.processes import pid_alive

__all__ = ["replace_folder", "restore_interrupted_save"]

logger = logging.getLogger(__name__)

_STAGING = "saving"
_ASIDE = "old"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_NOT_SUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV}


def replace_folder(target: Path, write: Callable[[Path], None], allowed: Collection[str]) -> Path:
    """Replace the folder ``target`` by the files that ``write(folder)`` writes, in one step.

    Parameters
    ----------
    target : Path
        The folder (created with its parents if missing; a symbolic link's folder is replaced,
        not the link).
    write : callable
        Writes the files into the empty folder it is given.
    allowed : collection of str
        The names an existing ``target`` may hold: anything else in it is a refusal, since the
        whole folder is replaced.

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    ValueError
        ``target`` is not a folder, or holds files that are not ``allowed`` (nothing written).
    """
    target = Path(os.path.realpath(target))
    _check_replaceable(target, allowed)
    target.parent.mkdir(parents=True, exist_ok=True)
    restore_interrupted_save(target)
    _remove_abandoned(target)
    staging = _sibling(target, _STAGING)
    os.mkdir(staging)
    try:
        if target.is_dir():  # keep who may read the model
            os.chmod(staging, stat.S_IMODE(target.stat().st_mode))
        write(staging)
        _flush_folder(staging)
        old = _put_in_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _flush(target.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def restore_interrupted_save(target: Path) -> None:
    """Rename back the old folder that a save killed between its two renames left aside.

    Only where the swap takes two renames (see the module docstring); a no-op when ``target``
    exists or no such folder is there.
    """
    target = Path(os.path.realpath(target))
    if target.exists():
        return
    for aside in _abandoned(target, _ASIDE):
        with contextlib.suppress(FileNotFoundError, FileExistsError, OSError):
            os.rename(aside, target)
            logger.warning("%s: put back the previous model that an interrupted save left", target)
            return


def _check_replaceable(target: Path, allowed: Collection[str]) -> None:
    if not target.exists():
        return
    if not target.is_dir():
        raise ValueError(f"{target} exists and is not a folder")
    foreign = sorted(set(os.listdir(target)) - set(allowed))
    if foreign:
        raise ValueError(
            f"{target} holds {foreign[0]!r}, which is not part of a saved model: the whole "
            "folder is replaced, so save the model into a folder of its own"
        )


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}")


def _abandoned(target: Path, kind: str) -> list[Path]:
    """The ``kind`` folders beside ``target`` whose process is gone."""
    prefix = f".{target.name}.{kind}-"
    found: list[Path] = []
    if not target.parent.is_dir():
        return found
    for name in os.listdir(target.parent):
        pid = name[len(prefix) :].split("-", 1)[0] if name.startswith(prefix) else ""
        if pid.isdigit() and not pid_alive(int(pid)):
            found.append(target.parent / name)
    return found


def _remove_abandoned(target: Path) -> None:
    for leftover in _abandoned(target, _STAGING) + _abandoned(target, _ASIDE):
        logger.info("deleting %s, left by an interrupted save", leftover)
        shutil.rmtree(leftover, ignore_errors=True)


def _put_in_place(staging: Path, target: Path) -> Path | None:
    """Give ``staging`` the name ``target``; return where the old folder went (None if none)."""
    if not target.exists():
        os.rename(staging, target)
        return None
    if _exchange(staging, target):
        return staging
    aside = _sibling(target, _ASIDE)
    os.rename(target, aside)
    os.rename(staging, target)
    return aside


def _exchange(first: Path, second: Path) -> bool:
    """Swap two names atomically; False where the system or the file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    paths = os.fsencode(first), os.fsencode(second)
    if renameat2(_AT_FDCWD, paths[0], _AT_FDCWD, paths[1], _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NOT_SUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def _flush_folder(folder: Path) -> None:
    """Every file of ``folder`` on disk, then the folder's list of names."""
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            descriptor = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
    _flush(folder)


def _flush(folder: Path) -> None:
    """The folder's names on disk (not possible everywhere: Windows cannot open a folder)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
