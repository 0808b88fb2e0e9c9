"""Index names: what Elasticsearch accepts, what a search may name, what deletion may name.

Checked before any request, with one line that says what is wrong with the name.
"""

from __future__ import annotations

__all__ = ["check_one_name", "check_target_name", "validate_index_name"]

_FORBIDDEN = set(' "\\/,|<>?*#:')


def validate_index_name(name: str) -> str:
    """An index name Elasticsearch accepts, checked before any request.

    Lower case, at most 255 bytes, not ``.`` or ``..``, not starting with ``-``, ``_`` or ``+``,
    and none of the characters ``space " \\ / , | < > ? * # :``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an index name must be a non-empty string, got {name!r}")
    reasons = []
    if name != name.lower():
        reasons.append("it must be lower case")
    if set(name) & _FORBIDDEN:
        reasons.append('it must not contain spaces or any of " \\ / , | < > ? * # :')
    if name[0] in "-_+":
        reasons.append("it must not start with -, _ or +")
    if name in (".", ".."):
        reasons.append("it must not be . or ..")
    if len(name.encode("utf-8")) > 255:
        reasons.append("it must be at most 255 bytes")
    if reasons:
        raise ValueError(f"invalid index name {name!r}: {'; '.join(reasons)}")
    return name


def check_target_name(name: str) -> str:
    """A name to search (index, alias or pattern): lower case, none of ``space " \\ / | < > ?``."""
    if (
        not isinstance(name, str)
        or not name
        or name != name.lower()
        or set(name) & set(' "\\/|<>?')
    ):
        raise ValueError(f"invalid index name, alias or pattern {name!r}")
    return name


def check_one_name(name: str, action: str = "delete", target: str = "index") -> str:
    """``name`` if it names one ``target`` in full; else one line saying why ``action`` is
    refused: a comma list, a wildcard pattern, ``_all``, or an invalid name."""
    if isinstance(name, str):
        many = None
        if "," in name:
            many = "a comma list"
        elif set(name) & set("*?"):
            many = "a wildcard pattern"
        elif name == "_all":
            many = "every index"
        if many:
            raise ValueError(
                f"refusing to {action} {name!r}: it names {many}, not one {target} named in full"
            )
    return validate_index_name(name)
