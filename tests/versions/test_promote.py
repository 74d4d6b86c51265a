"""Promotion moves a tag only when the candidate's batch is not worse beyond the margin."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from studio.evaluate.options import BatchOptions
from studio.store import SQLiteStore
from studio.versions.history import publish
from studio.versions.promote import promote
from tests.versions.project import edit, make


def _setup(tmp_path: Path) -> tuple[SQLiteStore, BatchOptions, Path]:
    main = make(tmp_path / "p")
    data = tmp_path / "data.jsonl"
    rows = [{"word": w, "want": f"{w.upper()}!"} for w in ("hi", "yo", "ok", "no")]
    rows[0]["want"] = "different"  # a version that shouts scores 0.75
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    options = BatchOptions(flow="", data=str(data), expect={"loud": "want"}, map_inputs={"word": "word"})
    return SQLiteStore(tmp_path / "s.db"), options, main


def test_a_tag_pointing_nowhere_is_set_and_min_delta_decides(tmp_path: Path) -> None:
    store, options, main = _setup(tmp_path)
    cache = tmp_path / "versions"
    first = publish(store, main).version
    done = asyncio.run(promote(store, first, tag="prod", options=options, cache=cache))
    assert done.promoted and done.current is None and done.candidate.score == 0.75
    edit(tmp_path / "p" / "sub" / "shout.yaml", "{{ item | upper }}!", "{% if item == 'ok' %}x{% else %}{{ item | upper }}!{% endif %}")  # fmt: skip
    worse = publish(store, main).version  # one more example wrong: 0.5
    refused = asyncio.run(promote(store, worse, tag="prod", options=options, cache=cache, min_delta=0.1))
    assert not refused.promoted and (refused.candidate.score, refused.current.score) == (0.5, 0.75)  # type: ignore[union-attr]
    assert [t.version_id for t in store.list_tags("greet")] == [first.version_id]
    allowed = asyncio.run(promote(store, worse, tag="prod", options=options, cache=cache, min_delta=0.3))
    assert allowed.promoted and [t.version_id for t in store.list_tags("greet")] == [worse.version_id]
    store.close()
