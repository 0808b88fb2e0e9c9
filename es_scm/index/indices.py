"""An index's lifecycle, as decisions: what a new index is made of, whether an index may be
deleted, where es-scm writes, and what a count answer says.

Pure code; :mod:`es_scm.elastic._async.index` makes the requests.

Where es-scm writes: the write alias
    Every index es-scm creates gets a hidden alias of its own, ``<index>.es-scm-writer-<token>``
    (a random token per creation), and every bulk request of an ingestion is sent to that alias
    with ``require_alias=true``. Elasticsearch then never creates an index implicitly: once the
    index is deleted (by another run, or by hand) its alias is gone with it, and the writes of a
    run still going fail with ``index_not_found_exception`` — the run stops, saying the index was
    deleted — instead of making a new index with a dynamic mapping under the same name. The token
    is the index's identity: an index deleted and created again (``--recreate``) has another
    alias, so a run that checked the first one never writes into the second. An index of an
    older es-scm (or one made by a key that may not manage aliases) gets its alias when a run
    first writes to it; where that is refused, the run writes to the index itself and warns that
    the guard is missing (:func:`write_target`, :func:`new_write_alias`).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError

from es_scm.engines import ELASTICSEARCH, Engine, error_reason
from es_scm.index.layout import IndexLayout
from es_scm.index.names import validate_index_name
from es_scm.index.schema import PartialResultError, index_mapping, require_whole

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "WRITE_ALIAS_MARK",
    "WriteTarget",
    "counted",
    "deletable",
    "describe",
    "is_write_alias",
    "layout_mapping",
    "new_write_alias",
    "refused_mapping",
    "write_target",
]

WRITE_ALIAS_MARK = ".es-scm-writer-"


@dataclass(frozen=True)
class WriteTarget:
    """Where an ingestion writes: ``index`` (the name it was given, which it reads and counts),
    ``writes_to`` (the write alias, or the index itself) and whether the bulk requests carry
    ``require_alias`` (``guarded``: they cannot create an index)."""

    index: str
    writes_to: str
    guarded: bool

    @property
    def warning(self) -> str | None:
        """What the run's report says when the writes are not guarded."""
        if self.guarded:
            return None
        return (
            f"the index {self.index!r} has no es-scm write alias and one could not be added: "
            "should the index be deleted during the run, Elasticsearch would make a new one "
            "with a dynamic mapping under its name (give the key the manage privilege on the "
            "index, or recreate the index with es-scm)"
        )


def new_write_alias(index: str) -> str:
    """A new write alias of ``index``: ``<index>.es-scm-writer-<16 hex digits>`` (the index's
    name shortened if the alias would be over Elasticsearch's 255 bytes)."""
    suffix = f"{WRITE_ALIAS_MARK}{secrets.token_hex(8)}"
    room = 255 - len(suffix)
    prefix = index.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return validate_index_name(prefix + suffix)


def is_write_alias(alias: str, properties: Mapping[str, Any]) -> bool:
    """Whether ``alias`` (its ``properties`` from a get-index answer) is es-scm's write alias."""
    return WRITE_ALIAS_MARK in alias and bool(properties.get("is_hidden"))


def write_target(name: str, indices: Mapping[str, Any]) -> tuple[str, str | None]:
    """Where to write for ``name``, from a get-index answer ``indices`` (concrete index →
    ``{"aliases": ...}``): the concrete index written (``name`` itself, or the write index of
    the alias ``name``) and the alias to write to, None when that index has no write alias (one
    must be added).

    The write index of an alias is the one marked ``is_write_index``, or its only index; an alias
    of several indices without one is itself the alias written to (Elasticsearch refuses the
    writes, naming the cause).
    """
    if name in indices:
        concrete = name
    else:
        marked = [
            index
            for index, body in indices.items()
            if body.get("aliases", {}).get(name, {}).get("is_write_index")
        ]
        candidates = marked or list(indices)
        if len(candidates) != 1:
            return name, name
        concrete = candidates[0]
    aliases = indices[concrete].get("aliases", {})
    found = sorted(alias for alias, props in aliases.items() if is_write_alias(alias, props))
    return concrete, (found[0] if found else None)


def counted(response: Mapping[str, Any], name: str) -> int:
    """The count of a count response, once every shard answered it."""
    require_whole(response, f"the count of {name!r}")
    return int(response["count"])


def layout_mapping(
    model: SoftCosineModel,
    layout: IndexLayout,
    version: str | None = None,
    dense: Mapping[str, Any] | None = None,
    swap: Mapping[str, Any] | None = None,
    engine: Engine = ELASTICSEARCH,
) -> dict[str, Any]:
    """The mapping of an index of ``model`` made as ``layout`` says (for the cluster's
    ``version``; without one, only checked: an analyzer or a metadata mapping that cannot be),
    with ``dense``, the record of the encoder of its dense vectors
    (:func:`~es_scm.index.dense.dense_meta`) when ``layout.dense`` asks for them, and
    ``swap``, the marker of an index made for a swap (:mod:`es_scm.index.swaps`), on the
    cluster's ``engine``.

    Raises
    ------
    DenseUnsupportedError
        ``layout.dense`` on an engine without dense vectors (one line, before any request).
    """
    if layout.dense is not None:
        engine.check_dense()
    return index_mapping(
        model,
        text_analyzer=layout.text_analyzer,
        metadata_mapping=layout.metadata_mapping,
        version=version,
        expansion=layout.expansion,
        dense=dense,
        swap=swap,
        engine=engine,
    )


def deletable(name: str, status: int, mappings: Mapping[str, Any]) -> bool:
    """Whether the index ``name`` may be deleted, from its get-mapping answer (``status``,
    ``mappings``): True for an index that es-scm created, False if there is none (404).

    Raises
    ------
    ValueError
        For an alias, or an index without es-scm's ``_meta`` marker (one line naming it).
    """
    if status == 404:
        return False
    own = mappings.get(name)
    if own is None:
        targets = ", ".join(sorted(mappings)) or "nothing"
        raise ValueError(
            f"refusing to delete {name!r}: it is an alias (of {targets}), not an index; es-scm "
            "deletes one index by its own name"
        )
    if not own.get("mappings", {}).get("_meta", {}).get("es_scm"):
        raise ValueError(f"refusing to delete {name!r}: es-scm did not create that index")
    return True


def refused_mapping(error: ApiError, layout: IndexLayout) -> ValueError | None:
    """A one-line error for a mapping Elasticsearch refused because of an option, else None."""
    if error.meta.status != 400:
        return None
    reason = error_reason(error)
    if layout.text_analyzer is not None and f"analyzer [{layout.text_analyzer}]" in reason:
        return ValueError(
            f"unknown text analyzer {layout.text_analyzer!r}: the cluster has no analyzer of that "
            "name (built in: standard, simple, whitespace, stop, keyword, pattern; language "
            "analyzers such as english, the default, come with the analysis-common module, or on "
            "the local runner with its es-scm-english plugin); to index without it, pass "
            "text_analyzer='standard' (es-scm index --text-analyzer standard)"
        )
    if layout.metadata_mapping is not None and "mapper_parsing_exception" in reason:
        return ValueError(f"the cluster refused the metadata mapping: {reason}")
    return None


def describe(error: Exception) -> str:
    """A failed refresh or count, on one line (for the report's warnings)."""
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status}: {error_reason(error)}"
    if isinstance(error, PartialResultError):
        return str(error)
    return f"connection error: {' '.join(str(error).split())[:200]}"
