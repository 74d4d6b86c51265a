"""Export a flow as an installable Python package (`flowstudio export`).

`writer` builds the package; `runtime` is what the exported packages import from flowstudio.
"""

from __future__ import annotations

from studio.export.writer import Export, export_flow

__all__ = ["Export", "export_flow"]
