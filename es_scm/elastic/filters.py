"""Filters: the query clauses a search's documents must match, and which of them are trusted.

A filter is an Elasticsearch query clause (or a list of them) sent as it is, in the ``filter`` of
a ``bool`` query: it restricts the matches and changes no score. Sent as it is, it runs with the
rights of the client's credentials, so a filter that comes from an untrusted user can do more
than filter:

* a ``terms`` lookup (``{"terms": {"field": {"index": "other", "id": "1", "path": "p"}}}``)
  reads a document of *another index* and filters by it (and, by the hits, shows what it holds);
* a ``wrapper`` query carries any query in base64, out of sight of whoever checks the JSON;
* ``script``, ``script_score`` and ``function_score`` run scripts; ``more_like_this`` and
  ``percolate`` can read documents of other indices; ``geo_shape`` can read a shape from
  another index; ``query_string``, ``regexp`` and ``wildcard`` accept patterns whose cost has
  no bound;
* any clause may be made slow enough to load the cluster.

:data:`SAFE_QUERIES` names the query types that read only the searched documents' fields with a
literal value. With ``filter_policy="safe"`` (a :class:`~es_scm.elastic.Searcher` option; the
default of ``es-scm search``) a filter may use those only, and anything else is refused before
any request, in one line that names the clause; ``"any"`` (the API's default, for filters the
application writes itself) sends every clause as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "FILTER_POLICIES",
    "SAFE_QUERIES",
    "Filter",
    "FilterPolicy",
    "UnsafeFilterError",
    "filter_clauses",
]

#: An Elasticsearch query clause, or a list of them, that the documents must match.
Filter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
#: ``"any"``: every clause is sent as it is; ``"safe"``: only :data:`SAFE_QUERIES`.
FilterPolicy = Literal["any", "safe"]
FILTER_POLICIES = ("any", "safe")

# Clauses that hold other clauses, and where: each inner clause is checked the same way.
_COMPOUND: dict[str, tuple[str, ...]] = {
    "bool": ("must", "should", "filter", "must_not"),
    "constant_score": ("filter",),
    "dis_max": ("queries",),
    "nested": ("query",),
}
# Clauses over the searched documents' own fields, with literal values only.
_LEAVES = (
    "exists",
    "ids",
    "match",
    "match_all",
    "match_bool_prefix",
    "match_none",
    "match_phrase",
    "match_phrase_prefix",
    "multi_match",
    "prefix",
    "range",
    "term",
    "terms",
)
#: The query types a filter may use under ``filter_policy="safe"``.
SAFE_QUERIES = tuple(sorted([*_COMPOUND, *_LEAVES]))


class UnsafeFilterError(ValueError):
    """A filter clause outside :data:`SAFE_QUERIES` under ``filter_policy="safe"``: ``clause``
    names it."""

    def __init__(self, clause: str, why: str) -> None:
        super().__init__(
            f"filter clause {clause!r} is not allowed ({why}); untrusted filters may use only "
            f"{', '.join(SAFE_QUERIES)} (filter_policy='any' sends trusted filters as they are)"
        )
        self.clause = clause


def filter_clauses(filter: Filter, policy: str = "any") -> tuple[dict[str, Any], ...]:
    """``filter`` as a tuple of query clauses (each a mapping), checked against ``policy``.

    Raises
    ------
    ValueError
        When ``filter`` is not a query clause or a list of them.
    UnsafeFilterError
        Under ``policy="safe"``, for the first clause (at any depth) that is not a safe one.
    """
    if filter is None:
        return ()
    clauses = [filter] if isinstance(filter, Mapping) else list(filter)
    for clause in clauses:
        if not isinstance(clause, Mapping) or not clause:
            raise ValueError(
                f"filter must be an Elasticsearch query clause or a list of them, got {clause!r}"
            )
        if policy == "safe":
            _check_safe(clause)
    return tuple(dict(clause) for clause in clauses)


def _check_safe(clause: Mapping[str, Any]) -> None:
    """Refuse ``clause`` unless it is of :data:`SAFE_QUERIES`, and so is every clause inside."""
    if len(clause) != 1:
        names = ", ".join(map(str, clause))
        raise UnsafeFilterError(names, "a query clause has one query type")
    kind, body = next(iter(clause.items()))
    if kind not in SAFE_QUERIES:
        raise UnsafeFilterError(kind, "it is not a query type that an untrusted filter may use")
    if kind == "terms" and isinstance(body, Mapping):
        for field, values in body.items():
            if isinstance(values, Mapping):  # {"index", "id", "path"}: another document's values
                raise UnsafeFilterError(
                    "terms", f"a terms lookup on {field!r} reads another document"
                )
    for place in _COMPOUND.get(kind, ()):
        inner = body.get(place) if isinstance(body, Mapping) else None
        for part in [inner] if isinstance(inner, Mapping) else list(inner or []):
            if not isinstance(part, Mapping):
                raise UnsafeFilterError(kind, f"its {place!r} holds {part!r}, not a query clause")
            _check_safe(part)
