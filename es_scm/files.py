"""Files from outside, read safely: what they are, and how much they declare, checked first.

A saved model may come from anyone (a download, a shared folder), a cache folder may hold what
another process left, a corpus path may name anything. Before es-scm reads such a file:

* it opens it only if it is a **regular file** (:func:`open_regular`, :func:`open_text`): it
  is opened with ``O_NONBLOCK`` (so that a named pipe never blocks the open) and, where links
  are not wanted, ``O_NOFOLLOW`` (so that a symbolic link is refused by the open itself, with no
  gap between a check and the open); then ``fstat`` of the open file must say "regular file". A
  named pipe, a device (``/dev/zero``), a socket or a folder is refused in one line that says
  which it is;
* it reads JSON only up to a stated size, checked with ``fstat`` before a byte is read
  (:func:`read_json`), and a document nested deeper than Python's parser goes is one line, not a
  ``RecursionError``;
* it unpacks an ``.npz`` (:func:`read_npz`) or ``.npy`` (:func:`read_npy`) only after reading
  every member's declared size and ``.npy`` header (shape, dtype) without its data, and checking
  them: no object arrays (nothing can unpickle), each member's data exactly the size its header
  declares, the whole archive at most :data:`MAX_INFLATION` times its size on disk (beyond a
  :data:`INFLATION_FLOOR` that any archive may declare), and what the caller checks against the
  file's own metadata (S's shape and non-zeros, say). The arrays are then read from the very zip
  entries that were checked, whose declared sizes bound what is unpacked: a small file that
  declares gigabytes is refused before any memory is taken.

Every refusal is a :class:`UnsafeFileError` (a ``ValueError``) whose one-line message names the
file. The functions take an open binary stream where the caller already holds one, so that what
was checked is what is read.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "INFLATION_FLOOR",
    "MAX_INFLATION",
    "ArrayHeader",
    "UnsafeFileError",
    "decode_utf8",
    "file_kind",
    "human_bytes",
    "open_regular",
    "open_text",
    "read_json",
    "read_npy",
    "read_npz",
    "utf8_lines",
]

#: How many times its size on disk an ``.npz`` may unpack to. The arrays es-scm saves declare
#: less than 10 times their size, S = identity (the most compressible S) included
#: (``tests/unit/test_hostile_model_files.py``); zeros compress about 1,000 times, which is how
#: a small file declares gigabytes. (Apache POI's guard against zip bombs refuses the same ratio.)
MAX_INFLATION = 100
#: What any archive may declare whatever its size on disk (a tiny model's arrays), in bytes.
INFLATION_FLOOR = 16 * 2**20
_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what numpy's savez writes
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnsafeFileError(ValueError):
    """A file that is not what it should be, or declares more than it may: one line naming it."""


def human_bytes(size: int) -> str:
    """``size`` for people: ``4.0 GiB``, ``6.2 MiB``, ``512 bytes``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (``a named pipe (FIFO)``, ``a folder``)."""
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(
    path: str | os.PathLike[str],
    what: str = "file",
    *,
    follow_symlinks: bool = False,
    private: bool = False,
) -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file.

    Parameters
    ----------
    path : path
    what : str
        What the file is, for the message (``"the model file"``).
    follow_symlinks : bool, default=False
        False: a symbolic link is refused (by ``O_NOFOLLOW``: no race between a check and the
        open). True: a link is followed, and what it leads to must be a regular file.
    private : bool, default=False
        Also refuse a file of another user, or one that group or others may write (a cache
        entry that another account could have planted).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    UnsafeFileError
        If it is a symbolic link (unless followed), a named pipe, a device, a socket or a
        folder, or (``private``) not the user's own private file; one line naming the file.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        _refuse_unopenable(path, what, error, follow_symlinks)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnsafeFileError(
                f"{path} is {file_kind(status.st_mode)}, not a regular file: {what} must be one"
            )
        if private and (_other_owner(status) or status.st_mode & 0o022):
            raise UnsafeFileError(
                f"{path} is not a private file of this user (owner uid {status.st_uid}, mode "
                f"{stat.S_IMODE(status.st_mode):o}): another account could have written it"
            )
        _blocking(descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    stream = open(descriptor, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    stream.raw.name = os.fspath(path)  # type: ignore[attr-defined]  # messages name the path
    return stream


def open_text(
    path: str | os.PathLike[str],
    what: str = "file",
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> io.TextIOWrapper:
    """A file the user named (a link to one is followed) opened as text, if it is a regular
    file (:func:`open_regular`): never a device or a named pipe, which could be endless or
    block."""
    return io.TextIOWrapper(open_regular(path, what, follow_symlinks=True), encoding, errors)


#: The byte order marks of UTF-16 and UTF-32, which a file saved as "Unicode" starts with.
_WIDE_MARKS = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}


def decode_utf8(data: bytes, path: str | os.PathLike[str], first_line: int = 1) -> str:
    """``data``, the text of ``path`` from line ``first_line`` on, decoded as UTF-8 (a byte
    order mark at the start of the file dropped).

    Raises
    ------
    ValueError
        ``"FILE:LINE: not valid UTF-8 (…)"`` naming the line, the byte and its column, and the
        encoding when the file starts with the byte order mark of UTF-16 or UTF-32 (a file
        saved as "Unicode"); a NUL byte, which UTF-8 text does not hold but UTF-16 without a
        mark does, is refused the same way.
    """
    try:
        text = data.decode("utf-8-sig" if first_line == 1 else "utf-8")
    except UnicodeDecodeError as error:
        line = first_line + data.count(b"\n", 0, error.start)
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        wide = next((name for mark, name in _WIDE_MARKS.items() if data.startswith(mark)), None)
        hint = f": the file is {wide} (it starts with its byte order mark); save it as UTF-8"
        raise ValueError(
            f"{os.fspath(path)}:{line}: not valid UTF-8 (byte 0x{data[error.start]:02x} at "
            f"column {column}: {error.reason})" + (hint if wide and first_line == 1 else "")
        ) from None
    if "\0" in text:
        line = first_line + text.count("\n", 0, text.index("\0"))
        raise ValueError(
            f"{os.fspath(path)}:{line}: a NUL byte, which UTF-8 text does not hold (is the file "
            "UTF-16? save it as UTF-8)"
        )
    return text


def utf8_lines(path: str | os.PathLike[str], what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a text file the user named (:func:`open_text`'s
    checks), each line decoded as UTF-8 when it is read: a byte that is not UTF-8 is an error
    naming the file and the line (:func:`decode_utf8`), whatever the file's size."""
    with open_regular(path, what, follow_symlinks=True) as stream:
        for number, raw in enumerate(stream, start=1):
            yield number, decode_utf8(raw, path, number).rstrip("\r\n")


def _refuse_unopenable(
    path: str | os.PathLike[str], what: str, error: OSError, follow_symlinks: bool
) -> NoReturn:
    """Re-raise the error of an open, saying what the path is when that is the reason."""
    if isinstance(error, FileNotFoundError):
        raise error
    if error.errno in (errno.ELOOP, errno.EMLINK) and not follow_symlinks:
        raise UnsafeFileError(
            f"{path} is a symbolic link: {what} must be a regular file, not a link (es-scm never "
            "writes one; copy the file instead)"
        ) from None
    try:
        mode = os.stat(path, follow_symlinks=follow_symlinks).st_mode
    except OSError:
        raise error from None
    if not stat.S_ISREG(mode):
        raise UnsafeFileError(
            f"{path} is {file_kind(mode)}, not a regular file: {what} must be one"
        ) from None
    raise error


def _blocking(descriptor: int) -> None:
    """Clear ``O_NONBLOCK`` (set only so that opening a pipe could not block)."""
    try:
        import fcntl
    except ImportError:  # Windows: no O_NONBLOCK was set
        return
    flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
    fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)


def _other_owner(status: os.stat_result) -> bool:
    return hasattr(os, "getuid") and status.st_uid != os.getuid()


def _size(stream: IO[bytes]) -> int:
    try:
        return os.fstat(stream.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):  # an in-memory stream
        here = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        stream.seek(here)
        return end


def _name(stream: IO[bytes], name: str | os.PathLike[str] | None) -> str:
    return os.fspath(name) if name is not None else str(getattr(stream, "name", "the stream"))


def read_json(
    source: str | os.PathLike[str] | IO[bytes],
    limit: int,
    what: str = "the JSON file",
    *,
    name: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
) -> Any:
    """The JSON document of a regular file (a path, opened by :func:`open_regular` with
    ``follow_symlinks``, or a stream it opened), at most ``limit`` bytes long.

    Raises
    ------
    UnsafeFileError
        The file is longer than ``limit`` (checked before reading), or not a regular file.
    ValueError
        It is not valid UTF-8 JSON, or is nested deeper than Python's parser can go.
    """
    if isinstance(source, (str, os.PathLike)):
        with open_regular(source, what, follow_symlinks=follow_symlinks) as stream:
            return read_json(stream, limit, what, name=source)
    where = _name(source, name)
    size = _size(source)
    if size > limit:
        raise UnsafeFileError(
            f"{where} is {human_bytes(size)}: more than the {human_bytes(limit)} {what} may hold"
        )
    data = source.read(limit + 1)
    if len(data) > limit:  # it grew since fstat
        raise UnsafeFileError(f"{where} is more than the {human_bytes(limit)} {what} may hold")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(f"{where} is damaged: not valid UTF-8 ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{where} is damaged: not valid JSON ({error})") from None
    except RecursionError:
        raise ValueError(f"{where} is damaged: JSON nested too deeply to read") from None


@dataclass(frozen=True)
class ArrayHeader:
    """What an ``.npy`` header declares: the array's shape and dtype (and so its size)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        """The number of elements."""
        count = 1
        for length in self.shape:
            count *= length
        return count

    @property
    def nbytes(self) -> int:
        """The bytes of data the header declares."""
        return self.size * self.dtype.itemsize

    def is_text(self, max_chars: int) -> bool:
        """Whether it is one string (a 0-d ``str`` array) of at most ``max_chars`` characters."""
        return self.shape == () and self.dtype.kind == "U" and self.dtype.itemsize <= 4 * max_chars

    def is_vector(self, kinds: str, length: int | None = None) -> bool:
        """Whether it is 1-d, of a dtype kind in ``kinds`` (``"iu"``, ``"f"``), of ``length``."""
        ok = len(self.shape) == 1 and self.dtype.kind in kinds
        return ok and (length is None or self.shape[0] == length)


def _npy_header(stream: IO[bytes], where: str) -> tuple[ArrayHeader, int]:
    """The header of an ``.npy`` stream (read up to its data) and its length in bytes."""
    import numpy as np  # here, not at the top: the corpus readers use this module without it
    from numpy.lib import format as npy_format

    try:
        version = npy_format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(stream)
        else:
            shape, _, dtype = npy_format.read_array_header_2_0(stream)
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as error:
        raise UnsafeFileError(f"{where}: not a NumPy array ({error})") from None
    if dtype.hasobject:
        raise UnsafeFileError(f"{where}: holds Python objects (a pickle), which es-scm never reads")
    return ArrayHeader(tuple(int(n) for n in shape), np.dtype(dtype)), stream.tell()


def _read_array(stream: IO[bytes], header: ArrayHeader, where: str) -> np.ndarray:
    """The array of an ``.npy`` stream (from its start) whose header was checked as ``header``."""
    from numpy.lib import format as npy_format

    try:
        array = npy_format.read_array(stream, allow_pickle=False)
    except (ValueError, EOFError, OSError, MemoryError, zipfile.BadZipFile) as error:
        raise ValueError(f"{where} is damaged ({type(error).__name__}: {error})") from None
    if array.shape != header.shape or array.dtype != header.dtype:  # changed since checked
        raise ValueError(f"{where} changed while it was read")
    return array


def read_npy(stream: IO[bytes], what: str = "the array file", *, name: Any = None) -> np.ndarray:
    """The array of an ``.npy`` file opened by :func:`open_regular`, after checking that its
    header declares exactly the data the file holds (no more memory than its size is taken).

    Raises
    ------
    UnsafeFileError
        The header is not an array's, declares Python objects, or declares another size than the
        file's.
    ValueError
        The data cannot be read.
    """
    where = f"{what} {_name(stream, name)}"
    header, offset = _npy_header(stream, where)
    size = _size(stream)
    if offset + header.nbytes != size:
        raise UnsafeFileError(
            f"{where} declares {header.shape} {header.dtype} ({human_bytes(header.nbytes)} of "
            f"data) but holds {human_bytes(max(size - offset, 0))}"
        )
    stream.seek(0)
    return _read_array(stream, header, where)


def read_npz(
    stream: IO[bytes],
    check: Callable[[Mapping[str, ArrayHeader]], str | None],
    what: str = "the archive",
    *,
    name: Any = None,
) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file opened by :func:`open_regular`, each unpacked only after
    every member's declared size and header passed the checks of the module docstring and
    ``check(headers)`` (member name without ``.npy`` → :class:`ArrayHeader`), which returns why
    the arrays do not fit the file's own metadata, or None.

    Raises
    ------
    UnsafeFileError
        The file is not a zip of ``.npy`` members, or a member declares more than it may; one line
        naming the file and the size declared.
    ValueError
        An array cannot be read.
    """
    where = _name(stream, name)
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise UnsafeFileError(f"{where} is damaged: not a NumPy archive (.npz): {error}") from None
    with archive:
        members = _check_members(archive, _size(stream), where)
        headers = {key: header for key, (_, header) in members.items()}
        problem = check(headers)
        if problem is not None:
            raise UnsafeFileError(f"{where}: {problem}")
        arrays = {}
        for key, (info, header) in members.items():
            with archive.open(info) as member:
                arrays[key] = _read_array(member, header, f"{where} ({info.filename})")
    return arrays


def _check_members(
    archive: zipfile.ZipFile, disk_size: int, where: str
) -> dict[str, tuple[zipfile.ZipInfo, ArrayHeader]]:
    """Every member's zip entry and ``.npy`` header, checked, read without their data."""
    infos = archive.infolist()
    names = [info.filename for info in infos]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise UnsafeFileError(f"{where} holds two members named {duplicate!r}")
    declared = sum(info.file_size for info in infos)
    allowed = max(MAX_INFLATION * disk_size, INFLATION_FLOOR)
    if declared > allowed:
        raise UnsafeFileError(
            f"{where} declares {human_bytes(declared)} of arrays in {human_bytes(disk_size)} on "
            f"disk, more than {MAX_INFLATION} times its size: refused before unpacking (no "
            "saved model compresses so well; a file of zeros does)"
        )
    members = {}
    for info in infos:
        label = f"{where} ({info.filename})"
        if not info.filename.endswith(".npy") or info.is_dir():
            raise UnsafeFileError(f"{label}: not a NumPy array member")
        if info.compress_type not in _COMPRESSIONS:
            raise UnsafeFileError(f"{label}: compression {info.compress_type} is not numpy's")
        try:
            with archive.open(info) as member:
                header, offset = _npy_header(member, label)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as error:
            raise UnsafeFileError(f"{label}: cannot be read ({error})") from None
        if offset + header.nbytes != info.file_size:
            raise UnsafeFileError(
                f"{label} declares {header.shape} {header.dtype}, "
                f"{human_bytes(header.nbytes)} of data, but its zip entry holds "
                f"{human_bytes(max(info.file_size - offset, 0))}"
            )
        members[info.filename[: -len(".npy")]] = (info, header)
    return members
