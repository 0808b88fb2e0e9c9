"""Names of the indices behind an alias (model swaps on a real node:
tests/integration/test_aliases.py)."""

from __future__ import annotations

import pytest

from es_scm.elastic.aliases import new_index_name


def test_new_index_names_carry_a_timestamp():
    assert new_index_name("news").startswith("news-20")
    with pytest.raises(ValueError, match="lower case"):
        new_index_name("News")
