"""What a model swap that was killed leaves behind, and how a later run knows it: the decisions.

A swap (:func:`~es_scm.elastic.reindex_into_alias`, ``es-scm index --alias``) creates a new
index, fills it, moves the alias, then deletes the old index. Killed with SIGKILL (or by a lost
machine) while it fills, the new index stays; killed just after the move, the old one stays.
Neither is what the alias points at, so nothing deleted or reported them, and they piled up
(issue 34, item 3). Every index a swap creates is therefore marked, in its mapping's
``_meta.es_scm.swap`` (:func:`swap_marker`), from its creation on:

``alias``
    The alias the swap is for.
``run``
    Which run created it: a random ``id``, the ``host`` name, the ``machine`` (the boot id and
    the PID namespace: two containers of one host name are two machines) and the ``pid``.
``state``, ``started``, ``heartbeat``
    ``filling`` from the creation until the alias moves onto it, then ``moved``; while it fills,
    the run renews ``heartbeat`` (UTC, ISO 8601) every :data:`HEARTBEAT` seconds.
``retired`` or ``kept``
    Set on each old index (one with a marker) by the swap that moves the alias off it, before
    the move: ``retired`` when the swap will delete it, ``kept`` when it keeps it for a rollback
    (``keep_old``). Each names the new index (``for``).

The rule (:func:`swap_leftovers`). Before it creates its own index, a swap of an alias — and
:func:`~es_scm.elastic.remove_swap_leftovers`, and ``es-scm index --alias`` — deletes each index
whose marker names that alias, that no alias points at (neither this alias, which the
applications search, nor any other; es-scm's own hidden write alias does not count), that no
swap kept, and that either

* a swap ``retired`` (the swap was killed between moving the alias and deleting it), or
* is still ``filling`` while no run writes it any more: its run is gone — on this machine, its
  process no longer exists; on another machine, which cannot be asked, its heartbeat is older
  than :data:`LEASE`. A run that fills its index renews the heartbeat every :data:`HEARTBEAT`
  seconds, so a live run is never judged gone by a cleaner whose clock is less than
  ``LEASE - HEARTBEAT`` seconds off.

A ``filling`` index whose run is alive (or whose heartbeat is fresh) is reported as being filled
by another run, with the run and the heartbeat's age, and left alone. An index the alias was
moved off by hand (a rollback) is neither retired nor filling, and is left alone; so are indices
without the marker (made by plain ``es-scm index``, by hand, or by an es-scm before the marker).

A run whose heartbeat could not be written for :data:`LEASE` (a paused process, a cluster that
refused it) may find its index deleted by a cleaner on another machine: its next write fails on
the index's write alias ("the index … was deleted during the run") and its move fails, so no
document is lost silently.

Pure code: the requests are made by :mod:`es_scm.elastic._async.aliases`.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from es_scm.index.indices import is_write_alias

__all__ = [
    "HEARTBEAT",
    "LEASE",
    "SWAP_KEY",
    "Leftover",
    "SwapCleanup",
    "SwapRun",
    "beaten",
    "moved_marker",
    "retiring_marker",
    "swap_leftovers",
    "swap_marker",
    "with_marker",
]

#: Where the marker is, under ``_meta.es_scm``.
SWAP_KEY = "swap"
#: Seconds between two heartbeats of a run that fills its index.
HEARTBEAT = 30.0
#: Seconds after its last heartbeat that a run on another machine is taken to be gone.
LEASE = 600.0

_FILLING, _MOVED = "filling", "moved"


@dataclass(frozen=True)
class SwapRun:
    """A run that creates an index for a swap: a random ``id``, and where it runs (the
    ``host`` name, the ``machine``: boot id and PID namespace, None where the system does not
    say, and the ``pid``)."""

    id: str
    host: str
    machine: str | None
    pid: int

    @classmethod
    def this(cls) -> SwapRun:
        """This process, as a new run."""
        return cls(secrets.token_hex(8), socket.gethostname(), this_machine(), os.getpid())

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "machine": self.machine, "pid": self.pid}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> SwapRun:
        pid = record.get("pid")
        return cls(
            str(record.get("id", "")),
            str(record.get("host", "?")),
            record.get("machine") if isinstance(record.get("machine"), str) else None,
            pid if isinstance(pid, int) and not isinstance(pid, bool) else -1,
        )

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def this_machine() -> str | None:
    """This machine as far as processes go: the kernel's boot id and this process's PID
    namespace (Linux); None elsewhere, where only the heartbeat tells whether a run is gone."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot}/{namespace}"


def _timestamp(now: dt.datetime) -> str:
    return now.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def swap_marker(alias: str, run: SwapRun, now: dt.datetime) -> dict[str, Any]:
    """The marker of an index that ``run`` creates now for a swap of ``alias``."""
    stamp = _timestamp(now)
    return {
        "alias": alias,
        "run": run.as_dict(),
        "state": _FILLING,
        "started": stamp,
        "heartbeat": stamp,
    }


def with_marker(meta: Mapping[str, Any], marker: Mapping[str, Any]) -> dict[str, Any]:
    """An index's whole ``_meta`` with its swap ``marker`` replaced (Elasticsearch replaces the
    whole ``_meta`` of a mapping update, so the model's record must be sent with it)."""
    es_scm = dict(meta.get("es_scm", {}))
    es_scm[SWAP_KEY] = dict(marker)
    return {**meta, "es_scm": es_scm}


def marker_of(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The swap marker of an index's ``_meta``, or None."""
    marker = meta.get("es_scm", {}).get(SWAP_KEY) if isinstance(meta, Mapping) else None
    return dict(marker) if isinstance(marker, Mapping) else None


def beaten(marker: Mapping[str, Any], now: dt.datetime) -> dict[str, Any]:
    """``marker`` with its heartbeat renewed now."""
    return {**marker, "heartbeat": _timestamp(now)}


def moved_marker(marker: Mapping[str, Any], now: dt.datetime) -> dict[str, Any]:
    """``marker`` once the alias moved onto its index: no run writes it any more (its last
    heartbeat is the move's)."""
    stamp = _timestamp(now)
    return {**marker, "state": _MOVED, "moved": stamp, "heartbeat": stamp}


def retiring_marker(
    marker: Mapping[str, Any], by: str, keep: bool, now: dt.datetime
) -> dict[str, Any]:
    """``marker`` of an old index that the swap to ``by`` moves the alias off: ``kept`` (for a
    rollback, ``keep``) or ``retired`` (to be deleted). A ``kept`` mark already there stays: of
    two swaps racing, one that keeps the index wins over one that would delete it."""
    mark = {"for": by, "at": _timestamp(now)}
    if keep:
        return {**marker, "kept": mark}
    return {**marker, "retired": mark}


@dataclass(frozen=True)
class Leftover:
    """An index of a swap of the alias: ``why`` it may be deleted, or why it is left alone."""

    index: str
    why: str


@dataclass
class SwapCleanup:
    """What a cleanup of an alias's swaps found: the indices it ``deleted`` (each with why),
    those another run is still ``writing`` (left alone), and a ``warning`` when the cluster
    could not be looked through (the cleanup is skipped then; the swap goes on)."""

    alias: str
    deleted: list[Leftover]
    writing: list[Leftover]
    warning: str | None = None


def swap_leftovers(
    alias: str,
    metas: Mapping[str, Mapping[str, Any]],
    aliases: Mapping[str, Any],
    now: dt.datetime,
    machine: str | None,
    alive: Callable[[int], bool],
) -> tuple[list[Leftover], list[Leftover]]:
    """Which indices a killed swap of ``alias`` left behind, and which another run is writing.

    Parameters
    ----------
    alias : str
    metas : mapping
        Index → its ``_meta`` (only those with a swap marker matter).
    aliases : mapping
        A get-alias answer of those indices: index → ``{"aliases": {name: properties}}``.
    now : datetime
        This cleaner's clock.
    machine : str or None
        This machine (:func:`this_machine`).
    alive : callable
        Whether a process of this machine exists (:func:`es_scm.processes.pid_alive`).

    Returns
    -------
    (leftovers, writing) : lists of Leftover
        The indices to delete (the module's rule), and those left to the run filling them.
    """
    leftovers: list[Leftover] = []
    writing: list[Leftover] = []
    for index in sorted(metas):
        marker = marker_of(metas[index])
        if marker is None or marker.get("alias") != alias or marker.get("kept"):
            continue
        pointing = [
            name
            for name, properties in aliases.get(index, {}).get("aliases", {}).items()
            if not is_write_alias(name, properties)
        ]
        if pointing:
            continue
        run = SwapRun.from_dict(marker.get("run", {}))
        started = marker.get("started", "?")
        retired = marker.get("retired")
        if isinstance(retired, Mapping):
            leftovers.append(
                Leftover(
                    index,
                    f"the swap to {retired.get('for', '?')!r} moved the alias off it and was "
                    "killed before deleting it",
                )
            )
            continue
        if marker.get("state") != _FILLING:  # moved onto, then off by hand: not ours to delete
            continue
        age = _age(marker.get("heartbeat"), now)
        here = machine is not None and run.machine == machine
        if here and not alive(run.pid):
            gone = f"its run ({run.describe()}, started {started}) is gone"
        elif age is None or age > LEASE:
            shown = "never" if age is None else f"{age:.0f} s ago"
            gone = (
                f"its run ({run.describe()}, started {started}) last showed it was alive {shown}, "
                f"more than the {LEASE:.0f} s lease"
            )
        else:
            writing.append(
                Leftover(
                    index,
                    f"{run.describe()} is filling it (started {started}, last "
                    f"heartbeat {max(age, 0):.0f} s ago)",
                )
            )
            continue
        leftovers.append(Leftover(index, f"a swap that never moved the alias onto it: {gone}"))
    return leftovers, writing


def _age(stamp: Any, now: dt.datetime) -> float | None:
    """Seconds since ``stamp`` (ISO 8601), or None if it is not one."""
    if not isinstance(stamp, str):
        return None
    try:
        then = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.timezone.utc)
    return (now - then).total_seconds()
