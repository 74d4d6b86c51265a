"""The filters Runs and Reviews share: any flow or status, a status, days picked in a date input."""

from __future__ import annotations

import datetime as dt

ANY = "(any)"
"""The choice that filters nothing."""
STATUSES = ["succeeded", "failed", "waiting", "running", "interrupted"]


def picked_days(picked: object) -> tuple[dt.date | None, dt.date | None]:
    """(first, last) day of what the date input gives: (), (first,) or (first, last)."""
    days = list(picked) if isinstance(picked, tuple | list) else [picked]
    dates = [d for d in days if isinstance(d, dt.date)]
    return (dates[0] if dates else None, dates[-1] if dates else None)
