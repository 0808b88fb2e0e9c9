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

Whatever the policy, a filter is refused in one line when it is nested deeper than
:data:`MAX_FILTER_DEPTH` levels (no filter needs that many, and no ``RecursionError`` is
raised on the way), and when it names a field that no index behind the searched name maps
(:class:`MappedFields`, read from the mapping that the model check gets anyway): such a clause
matches nothing, so a search would silently find nothing. An es-scm index maps ``text``,
``scm.*`` and ``metadata``, and keeps a document's other fields under ``metadata.``: a filter on
``year`` is told to name ``metadata.year``. The field is not rewritten for the user: a filter is
Elasticsearch's query language, and means in es-scm what it means in Elasticsearch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "FILTER_POLICIES",
    "FLATTENED_TYPES",
    "MAX_FILTER_DEPTH",
    "SAFE_QUERIES",
    "Filter",
    "FilterPolicy",
    "MappedFields",
    "UnknownFieldError",
    "UnsafeFilterError",
    "filter_clauses",
    "filter_fields",
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
#: The deepest a filter may be nested, in JSON levels (objects and arrays): a ``bool`` inside a
#: ``bool`` takes three (``{"bool": {"filter": [...]}}``), so this allows thirty of them.
MAX_FILTER_DEPTH = 100

# Leaf clauses whose body is {field: value or options} (besides these parameters of the clause).
_FIELD_KEYED = (
    "fuzzy",
    "match",
    "match_bool_prefix",
    "match_phrase",
    "match_phrase_prefix",
    "prefix",
    "range",
    "regexp",
    "term",
    "terms",
    "terms_set",
    "wildcard",
)
_CLAUSE_PARAMETERS = frozenset({"boost", "_name"})
#: The field types that index every leaf under its dotted path: Elasticsearch's ``flattened``,
#: OpenSearch's ``flat_object``.
FLATTENED_TYPES = ("flattened", "flat_object")


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
        When ``filter`` is not a query clause or a list of them, or is nested deeper than
        :data:`MAX_FILTER_DEPTH`.
    UnsafeFilterError
        Under ``policy="safe"``, for the first clause (at any depth) that is not a safe one.
    """
    if filter is None:
        return ()
    _check_depth(filter)
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


def _check_depth(filter: Any) -> None:
    """Refuse a filter nested deeper than :data:`MAX_FILTER_DEPTH` (walked without recursion,
    so that any depth gives this one line)."""
    stack = [(filter, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children = list(value.values())
        elif isinstance(value, (list, tuple)):
            children = list(value)
        else:
            continue
        if depth > MAX_FILTER_DEPTH:
            raise ValueError(
                f"the filter is nested deeper than {MAX_FILTER_DEPTH} levels; no search needs "
                "that many: flatten its bool clauses"
            )
        stack += [(child, depth + 1) for child in children]


def filter_fields(clauses: Sequence[Mapping[str, Any]]) -> list[str]:
    """The document fields that filter ``clauses`` name, in order, each once: those of the
    query types whose fields this module knows where to find (term-level and full-text
    clauses, ``exists``, ``multi_match``, ``nested``'s path and query, and the clauses inside
    ``bool``, ``constant_score`` and ``dis_max``). A name with a wildcard, a boost (``^2``) or a
    leading underscore (``_id``, a metadata field of Elasticsearch's) is left out, and so is
    every clause of another type: nothing is reported that Elasticsearch would accept."""
    fields: list[str] = []
    stack = list(reversed(clauses))
    while stack:
        clause = stack.pop()
        if not isinstance(clause, Mapping) or len(clause) != 1:
            continue
        kind, body = next(iter(clause.items()))
        if not isinstance(body, Mapping):
            continue
        names: list[Any] = []
        if kind in _FIELD_KEYED:
            names = [key for key in body if key not in _CLAUSE_PARAMETERS]
        elif kind == "exists":
            names = [body.get("field")]
        elif kind == "multi_match":
            names = list(body.get("fields") or [])
        elif kind == "nested":
            names = [body.get("path")]
        fields += [name.split("^")[0] for name in names if isinstance(name, str)]
        inner: list[Any] = []
        for place in _COMPOUND.get(kind, ()):
            part = body.get(place)
            inner += [part] if isinstance(part, Mapping) else list(part or [])
        stack += reversed(inner)
    named = (field for field in fields if field and "*" not in field and field[0] != "_")
    return list(dict.fromkeys(named))


class UnknownFieldError(ValueError):
    """A filter names a field that no index behind the searched name maps: it would match no
    document. ``field`` names it."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class MappedFields:
    """The fields that the indices behind a name map, read from their mappings: what a filter
    may name (``known``), and a one-line error for what it may not (``check``).

    A field is known when an index maps it (a property at any depth, a multi-field, a runtime
    field), when it is an object that holds mapped fields (``exists`` takes one), and when it
    lies under a ``flattened`` field (es-scm's default ``metadata``, whose every leaf is indexed
    under its dotted path; OpenSearch's ``flat_object``, :data:`FLATTENED_TYPES`).
    """

    def __init__(self, mappings: Sequence[Mapping[str, Any]]) -> None:
        self.fields: set[str] = set()
        self.flattened: set[str] = set()
        for mapping in mappings:
            self._read(mapping.get("properties") or {}, "")
            self.fields |= set(mapping.get("runtime") or {})

    def _read(self, properties: Mapping[str, Any], prefix: str) -> None:
        stack = [(properties, prefix)]
        while stack:
            level, at = stack.pop()
            for name, field in level.items():
                if not isinstance(field, Mapping):
                    continue
                path = f"{at}{name}"
                self.fields.add(path)
                if field.get("type") in FLATTENED_TYPES:
                    self.flattened.add(path)
                for inner in ("properties", "fields"):  # object fields, multi-fields
                    if isinstance(field.get(inner), Mapping):
                        stack.append((field[inner], f"{path}."))

    def known(self, field: str) -> bool:
        """Whether ``field`` is mapped by some index, or lies under a flattened field."""
        if field in self.fields:
            return True
        return any(field.startswith(f"{root}.") for root in self.flattened)

    def unknown(self, clauses: Sequence[Mapping[str, Any]]) -> list[str]:
        """The fields that ``clauses`` name (:func:`filter_fields`) and no index maps."""
        return [field for field in filter_fields(clauses) if not self.known(field)]

    def check(self, name: str, clauses: Sequence[Mapping[str, Any]]) -> None:
        """Raise :class:`UnknownFieldError` for the first field of ``clauses`` that no index
        behind ``name`` maps, saying which path was probably meant."""
        unknown = self.unknown(clauses)
        if not unknown:
            return
        field = unknown[0]
        meant = f"metadata.{field}"
        if not field.startswith("metadata.") and self.known(meant):
            hint = (
                f"es-scm keeps a document's fields other than its text under metadata: filter "
                f"on {meant!r}"
            )
        else:
            hint = f"the fields it maps are {self._summary()}"
        raise UnknownFieldError(
            f"the filter names the field {field!r}, which {name!r} does not have (it would "
            f"match no document); {hint}",
            field,
        )

    def _summary(self, most: int = 12) -> str:
        """The mapped fields in a few words: ``text, scm.vector, ..., metadata.*``."""
        shown = sorted(
            f for f in self.fields if not any(f.startswith(f"{r}.") for r in self.flattened)
        )
        shown = [f"{f}.*" if f in self.flattened else f for f in shown]
        more = f" and {len(shown) - most} more" if len(shown) > most else ""
        return ", ".join(shown[:most]) + more
