"""The served flows' catalog reads a flow file again only when it changed (inode, size or
modification time), and a client's inputs are checked against the schema of the flow asked for."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from studio.errors import InputError
from studio.serve.catalog import Catalog
from studio.serve.schemas import check_inputs, inputs_schema
from tests.serve.conftest import SERVE_FLOWS

ANSWER = "Paris is the capital of France."


def _reply(catalog: Catalog) -> str:
    script = catalog.get("reply").flow.spec.models["default"].script or []
    return str(script[-1].reply)


def test_an_unchanged_file_is_not_read_again_and_an_edited_one_is(tmp_path: Path) -> None:
    flow = Path(shutil.copy(SERVE_FLOWS / "reply.yaml", tmp_path / "reply.yaml"))
    catalog = Catalog(tmp_path)
    first = catalog.get("reply")
    assert catalog.get("reply") is first  # same stamp: the same compiled flow
    flow.write_text(flow.read_text().replace(ANSWER, "Edited answer."))
    assert _reply(catalog) == "Edited answer."


def test_a_file_swapped_in_with_the_same_size_and_time_is_read_again(tmp_path: Path) -> None:
    """An editor that saves by renaming a new file over the old one: the inode tells them apart."""
    flow = Path(shutil.copy(SERVE_FLOWS / "reply.yaml", tmp_path / "reply.yaml"))
    catalog = Catalog(tmp_path)
    assert _reply(catalog) == ANSWER
    before = flow.stat()
    swapped = tmp_path / "reply.yaml.new"
    swapped.write_text(flow.read_text().replace(ANSWER, ANSWER.replace("Paris", "Lyons")))  # same length
    os.utime(swapped, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(swapped, flow)
    assert flow.stat().st_size == before.st_size and flow.stat().st_mtime_ns == before.st_mtime_ns
    assert _reply(catalog).startswith("Lyons")


def test_inputs_are_checked_against_the_flow_asked_for_whichever_was_checked_before() -> None:
    catalog = Catalog(SERVE_FLOWS)
    reply, steps = (inputs_schema(catalog.get(name).plan) for name in ("reply", "steps"))
    check_inputs(reply, {"question": "why?"})
    with pytest.raises(InputError, match="question"):
        check_inputs(steps, {"question": "why?"})  # the other flow's validator, not the last one built
    check_inputs(reply, {"question": "again?"})
