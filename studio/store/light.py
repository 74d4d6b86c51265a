"""sqlite_utils, imported without pandas and numpy.

sqlite_utils imports pandas and numpy whenever they are installed (the studio's extras install
them), only to accept their values as column values, which the store never writes; loading them
costs about 0.3 s at every start of a command that opens a store. They are hidden while
sqlite_utils is imported (an import of a name set to None in `sys.modules` raises ImportError,
which sqlite_utils takes as "not installed"), and visible again right after.
"""

from __future__ import annotations

import sys

_HIDDEN = [name for name in ("pandas", "numpy") if name not in sys.modules]
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]
try:
    import sqlite_utils
finally:
    for _name in _HIDDEN:
        del sys.modules[_name]

__all__ = ["sqlite_utils"]
