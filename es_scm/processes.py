"""Operating-system processes, as the library and the developer tools both need them."""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts too).

    The model layer asks it of the writer that holds a saved model's lock (a lock whose writer
    is gone is stale); the local runner of the node that a pid file names.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
