"""The search methods, by name: the one registry of es-scm's searches.

Each method is one module of :mod:`es_scm.search` (its request and its plan,
:class:`~es_scm.search.plan.SearchMethod`) and one entry here, under the searcher's method name.
A searcher inherits :class:`SearchMethods`, so each entry is one of its methods; ``batch_search``
runs any of them by name (``method=``), and the command line's modes and the retrievers' modes
come from :data:`METHODS`. Adding a method: its module, and its line below.
"""

from __future__ import annotations

from es_scm.search import bm25, dense, exact, fast, native, rescore
from es_scm.search.hybrid import plan as hybrid
from es_scm.search.plan import SearchMethod

__all__ = ["METHODS", "SearchMethods"]


class SearchMethods:
    """The search methods of a searcher (each a :class:`~es_scm.search.plan.SearchMethod`: the
    request function's signature and docstring, the method's plan)."""

    search = exact.search
    fast = fast.fast
    native = native.native
    hybrid = hybrid.hybrid
    bm25 = bm25.bm25
    dense = dense.dense
    rescore = rescore.rescore


#: The search methods by name (the searcher's method names).
METHODS: dict[str, SearchMethod] = {
    name: method for name, method in vars(SearchMethods).items() if isinstance(method, SearchMethod)
}
