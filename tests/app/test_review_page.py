"""The Reviews page through AppTest: the queue, a review saved with a correction, skip, export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.settings import DIR_ENV
from studio.reviews.counts import review_counts
from studio.reviews.feedback import review
from studio.reviews.queue import EVERY_RUN
from studio.store import SQLiteStore
from studio.store.base import RunRecord
from studio.store.versions import VersionRecord
from tests.app.review_seed import TOPICS, seed_reviews
from tests.app.seed import FLOWS

TIMEOUT = 30


def _review_page() -> None:
    from studio.app.review_page import render

    render()


@pytest.fixture(scope="module")
def reviews_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("reviews") / "flowstudio.db"
    return db, seed_reviews(db)


def _caption(app: AppTest, text: str) -> str:
    return next(c.value for c in app.caption if text in c.value)


def test_review_correct_skip_and_export(
    reviews_db: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, runs = reviews_db
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    app = AppTest.from_function(_review_page, default_timeout=TIMEOUT).run()
    assert not app.exception, app.exception
    assert runs["failed"] in app.markdown[0].value  # the newest run the rules take: a failed one
    assert "why: failed" in app.markdown[0].value
    app.selectbox(key="review_flow").select("chain").run()
    app.selectbox(key="review_rule").select(EVERY_RUN).run()
    assert _caption(app, "to review") == "5 runs to review · 0 reviewed (0 good, 0 bad, 0 corrected)"
    newest = runs[TOPICS[-1]]
    assert newest in app.markdown[0].value and "why: " in app.markdown[0].value
    app.text_area(key=f"review_out_{newest}_headline").input("FOG LIFTS!")
    app.text_input(key=f"review_comment_{newest}").input("too gloomy")
    app.button(key="review_bad").click().run()
    assert not app.exception, app.exception
    assert app.success[0].value == f"Reviewed {newest}: bad, corrected headline."
    assert _caption(app, "to review") == "4 runs to review · 1 reviewed (0 good, 1 bad, 1 corrected)"
    app.button(key="review_skip").click().run()  # wind waits at the back
    app.button(key="review_good").click().run()  # snow
    store = SQLiteStore(db)
    try:
        (bad,) = store.feedback(newest)
        (good,) = store.feedback(runs["snow"])
        assert store.feedback(runs["wind"]) == []
    finally:
        store.close()
    assert (bad.value, bad.correction, bad.comment) == ("bad", {"headline": "FOG LIFTS!"}, "too gloomy")
    assert good.value == "good" and good.correction is None
    app.button(key="review_export").click().run()
    written = tmp_path / "chain-reviewed.jsonl"
    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert [(r["topic"], r["headline"], r["run_id"]) for r in rows] == [
        ("fog", "FOG LIFTS!", newest),
        ("snow", "SUNNY DAYS AHEAD!", runs["snow"]),
    ]
    assert app.success[0].value == f"Wrote 2 reviewed rows of chain to {written}."
    assert list(app.dataframe[-1].value["run_id"]) == [newest, runs["snow"]]
    for outside in ("/etc/reviewed.jsonl", "../reviewed.jsonl", "chain.yaml"):
        app.text_input(key="review_export_path_chain").input(outside).run()
        app.button(key="review_export").click().run()
        assert app.error and app.error[0].value.startswith("Not written:"), outside
    assert not (tmp_path.parent / "reviewed.jsonl").exists()


def _home_page() -> None:
    from studio.app.home_page import render

    render()


def test_home_cards_count_reviews_and_link_to_the_queue(
    reviews_db: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, runs = reviews_db
    for path in FLOWS.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    store = SQLiteStore(db)
    try:
        review(store, runs["sun"], verdict="bad", comment="dull")
        counts = review_counts(store, "chain")
    finally:
        store.close()
    app = AppTest.from_function(_home_page, default_timeout=TIMEOUT).run()
    assert not app.exception, app.exception
    links = {link.proto.label: link.proto.query_string for link in app.get("page_link")}
    said = f"Reviews: {counts.reviewed} reviewed · {counts.good} good, {counts.bad} bad"
    assert counts.bad >= 1 and links[said] == "flow=chain"
    assert "Reviews: none reviewed" in links  # the failing flow: run, never reviewed


def test_the_version_filter_keeps_the_runs_of_one_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "versions.db"
    store = SQLiteStore(db)
    try:
        for version, tag in (("a" * 64, "prod"), ("b" * 64, None)):
            store.put_version(VersionRecord(version, "chain", "chain.yaml", {}), {})
            if tag:
                store.set_tag("chain", tag, version)
            for n in range(2):
                run_id = f"{version[:4]}{n}"
                store.create_run(RunRecord(run_id, "chain", None, "h", {"topic": run_id}, version=version))
                store.finish_run(run_id, status="succeeded", outputs={"headline": "H", "draft": "d"}, error=None)
    finally:
        store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    app = AppTest.from_function(_review_page, default_timeout=TIMEOUT)
    app.query_params["flow"] = "chain"
    app.run()
    app.selectbox(key="review_rule").select(EVERY_RUN).run()
    assert _caption(app, "to review").startswith("4 runs to review")
    versions = app.selectbox(key="review_version")
    assert versions.options[1].startswith("bbbbbbbbbbbb · ")  # newest first, tags named
    assert versions.options[2].startswith("aaaaaaaaaaaa · prod · ")
    versions.select("a" * 64).run()
    assert not app.exception, app.exception
    assert _caption(app, "to review").startswith("2 runs to review")
    assert "aaaa" in app.markdown[0].value
