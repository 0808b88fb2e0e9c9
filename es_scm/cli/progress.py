"""Progress bars of the command line (tqdm, from the ``cli`` extra)."""

from __future__ import annotations

import sys
from typing import Any

from es_scm.extras import require

__all__ = ["progress_bar"]


def progress_bar(total: int | None, disable: bool, unit: str = "doc") -> Any:
    """A tqdm progress bar on stderr; without the ``cli`` extra, one line saying so, and None."""
    if disable:
        return None
    try:
        tqdm = require("tqdm", "progress bars").tqdm
    except ImportError as error:
        print(f"es-scm: {error} (--no-progress silences this)", file=sys.stderr)
        return None
    return tqdm(total=total, unit=unit, disable=None, file=sys.stderr)  # None: off without a TTY
