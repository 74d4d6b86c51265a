"""A flow published twice, for the History page's tests: v1 (with a batch scored on it), then a
new prompt as prod."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from studio.evaluate.batch import batch
from studio.evaluate.options import BatchOptions
from studio.store import SQLiteStore
from studio.versions.history import publish
from tests.versions.project import edit, make


def published(root: Path) -> tuple[Path, Path, list[str]]:
    """The greet project under `root/flows`, published as v1 (note "first", a batch scoring 0.75 on
    it), then with a new prompt as prod (note "warmer"): (flow file, database, [v1 id, prod id])."""
    main = make(root / "flows")
    db = root / "flowstudio.db"
    data = root / "flows" / "words.jsonl"
    rows = [{"word": w, "want": f"{w.upper()}!"} for w in ("hi", "yo", "ok", "no")]
    rows[0]["want"] = "different"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    store = SQLiteStore(db)
    try:
        first = publish(store, main, tag="v1", note="first").version.version_id
        options = BatchOptions(flow=str(main), data=str(data), expect={"loud": "want"}, version=first)
        with ThreadPoolExecutor(1) as thread:  # its own event loop: a browser test's Playwright holds one
            thread.submit(asyncio.run, batch(options, store)).result()
        edit(main, "Say {{ word }} politely.", "Say {{ word }} warmly.")
        second = publish(store, main, tag="prod", note="warmer").version.version_id
    finally:
        store.close()
    return main, db, [first, second]
