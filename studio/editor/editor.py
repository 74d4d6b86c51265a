"""One editing session: the flow, its layout and history, and the canvas's events applied to them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.editor.canvas import canvas_edges, canvas_nodes, card_sizes, ordering_pairs, palette
from studio.editor.document import EditableFlow, edges
from studio.editor.history import History, Snapshot
from studio.editor.layout import (
    DEFAULT_SIZE,
    INPUTS,
    OUTPUTS,
    READABLE_VIEW,
    Layout,
    free_spot,
    read_sidecar,
    readable_layout,
    sidecar_path,
    sidecar_text,
)
from studio.editor.problems import Problem, check
from studio.errors import FlowError
from studio.flow.spec import Flow


@dataclass(frozen=True)
class Message:
    """A line shown on the canvas: a refused connection, a saved file."""

    level: str
    """`error` or `info`."""
    text: str


def write_file(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a crash never leaves half a flow."""
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w", encoding="utf-8", newline="") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)


def _stamp(path: Path) -> tuple[int, int] | None:
    """(size, modification time) of a file, None when it is gone."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


class Editor:
    """The flow under edit; `apply` takes the canvas component's events."""

    def __init__(self, path: Path, text: str | None = None) -> None:
        self.path = path
        self._disk_stamp = _stamp(path)
        self.saved_text = path.read_text(encoding="utf-8") if text is None and path.exists() else (text or "")
        self.checked: Flow | None = None
        """The flow as it stands, when it compiles."""
        self.problems: list[Problem] = []
        data = self._check(self.saved_text)  # first: it refuses text that is not acceptable YAML
        self.flow = EditableFlow(self.saved_text, path, data=data)
        self.layout: Layout = read_sidecar(path)
        self.laid_out_here = not self.layout
        """No layout file: the layout was made on open (so the canvas may ask for narrower rows)."""
        self._place_missing(everything=self.laid_out_here)
        self.saved_layout = dict(self.layout)
        """As on disk, or as laid out automatically where there is no sidecar yet."""
        self.history = History(self._snapshot())
        self.selected: str | None = None
        self.message: Message | None = None
        self.version = 1
        self.session: str | None = None
        self.ack = 0
        self.refit = False
        """Set by Tidy: the next graph asks the canvas to fit the view once (the page clears it)."""
        self.open_request: Path | None = None
        """A sub-flow the canvas asked to open (the page switches to it)."""
        self._drawn_for: tuple[Any, tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None = None

    # -- state -------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        return Snapshot.of(self.flow.text, self.layout)

    def _place_missing(self, *, everything: bool = False, rows_width: float = READABLE_VIEW[0]) -> None:
        ids = [INPUTS, *(str(n) for n in self.flow.nodes()), OUTPUTS]
        if everything:
            graph = [(INPUTS, OUTPUTS), *((a, b) for a, _, b, _ in edges(self.flow)), *ordering_pairs(self.flow)]
            self.layout = readable_layout(ids, graph, card_sizes(self.flow), rows_width)
            return
        for node_id in ids:
            if node_id not in self.layout:
                self.layout[node_id] = free_spot(self.layout)
        for node_id in [n for n in self.layout if n not in ids]:
            del self.layout[node_id]

    def _drawn(
        self, status: Mapping[str, str] | None, notes: Mapping[str, Mapping[str, str]] | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The canvas's nodes and edges, kept while neither the flow (its version) nor the layout
        changed and no run is drawn: a click on a node reruns the page without rebuilding 200 cards."""
        if status or notes:
            return canvas_nodes(self.flow, self.layout, self.problems, status or {}, notes), canvas_edges(self.flow)
        key = (self.version, tuple(self.layout.items()))
        if self._drawn_for is None or self._drawn_for[0] != key:
            drawn = (canvas_nodes(self.flow, self.layout, self.problems, {}, None), canvas_edges(self.flow))
            self._drawn_for = (key, drawn)
        return self._drawn_for[1]

    def _changed(self, message: Message | None = None) -> None:
        """After an edit: drop positions of deleted nodes, revalidate, remember, redraw."""
        self._place_missing()
        self._check()
        self.history.push(self._snapshot())
        self.message = message
        self.version += 1

    def _check(self, text: str | None = None) -> Any:
        """Validate the text (the flow's by default); returns it as the safe loader read it."""
        checked = check(self.flow.text if text is None else text, self.path)
        self.checked, self.problems = checked.flow, checked.problems
        return checked.data

    def changed_on_disk(self) -> bool:
        """Whether the file was changed by someone else since it was opened or saved here
        (read again only when its size or modification time moved: the page asks on every rerun)."""
        stamp = _stamp(self.path)
        if stamp == self._disk_stamp:
            return False
        try:
            changed = self.path.read_text(encoding="utf-8") != self.saved_text
        except OSError:
            return True
        if not changed:
            self._disk_stamp = stamp
        return changed

    @property
    def dirty(self) -> bool:
        """Whether saving would write something."""
        return self.flow.text != self.saved_text or self.layout != self.saved_layout

    # -- canvas events -----------------------------------------------------------------------

    def apply_events(self, value: Mapping[str, Any] | None) -> bool:
        """Apply the component's queued events that are new; True when something was applied."""
        if not value:
            return False
        if value.get("session") != self.session:
            self.session, self.ack = value.get("session"), 0
        applied = False
        for event in value.get("events") or []:
            if int(event.get("seq", 0)) <= self.ack:
                continue
            self.ack = int(event["seq"])
            self.apply(event)
            applied = True
        return applied

    def apply(self, event: Mapping[str, Any]) -> None:
        """One canvas event: add_node, connect, delete, move, select, undo, redo, save, duplicate, tidy, rows,
        open_flow."""
        kind = event.get("kind")
        if kind == "add_node":
            wanted = str(event["id"]) if event.get("id") else None
            self.add_node(str(event["type"]), (float(event.get("x", 0)), float(event.get("y", 0))), wanted)
        elif kind == "connect":
            self.connect(
                str(event["source"]), str(event["sourceHandle"]), str(event["target"]), str(event["targetHandle"])
            )
        elif kind == "delete":
            self.delete([str(n) for n in event.get("nodes") or []], [str(e) for e in event.get("edges") or []])
        elif kind == "move":
            self.move({str(k): (float(v["x"]), float(v["y"])) for k, v in dict(event.get("positions") or {}).items()})
        elif kind == "select":
            self.selected = str(event["node"]) if event.get("node") else None
        elif kind == "undo":
            self.undo()
        elif kind == "redo":
            self.redo()
        elif kind == "save":
            self.save()
        elif kind == "duplicate":
            offset = (float(event.get("dx", 40)), float(event.get("dy", 40)))
            self.duplicate([str(n) for n in event.get("nodes") or []], offset)
        elif kind == "tidy":
            self.tidy()
        elif kind == "rows":
            self.fit_rows(float(event.get("width", READABLE_VIEW[0])))
        elif kind == "open_flow":
            self.open_request = (self.path.parent / str(event.get("path", ""))).resolve()

    def add_node(self, node_type: str, position: tuple[float, float] | None = None, wanted: str | None = None) -> str:
        node_id = self.flow.add_node(node_type, wanted)
        self.layout[node_id] = position or free_spot(self.layout)
        self.selected = node_id
        self._changed(Message("info", f"added {node_id} ({node_type})"))
        return node_id

    def tidy(self) -> None:
        """Lay the flow out left to right by its graph, as a flow without a layout file opens: one
        undoable step, written to the layout file by Save."""
        self._place_missing(everything=True)
        self.refit = True
        self._changed(Message("info", "tidied: laid out left to right"))

    def fit_rows(self, width: float) -> None:
        """The canvas's pane shows less than the rows a big flow opened in (a narrow window): lay it
        out again in rows `width` wide, as if it had opened so, while nothing has been edited yet and
        the layout was made here (a layout file's positions are the user's, kept)."""
        if not self.laid_out_here or self.version != 1 or self.layout != self.saved_layout:
            return
        self._place_missing(everything=True, rows_width=max(width, DEFAULT_SIZE[0]))
        if self.layout == self.saved_layout:
            return
        self.saved_layout = dict(self.layout)
        self.history = History(self._snapshot())
        self.version += 1  # new positions: the canvas opens its view on them again (useOpeningView.ts)

    def connect(self, source: str, source_port: str, target: str, target_port: str) -> bool:
        refused = self.flow.connect(source, source_port, target, target_port)
        if refused:
            self.message = Message("error", refused)
            self.version += 1
            return False
        self._changed()
        return True

    def delete(self, nodes: list[str], edges: list[str]) -> None:
        removable = [n for n in nodes if n not in (INPUTS, OUTPUTS)]
        self.flow.delete(removable, edges)
        if self.selected in removable:
            self.selected = None
        self._changed()

    def duplicate(self, nodes: list[str], offset: tuple[float, float] = (40.0, 40.0)) -> list[str]:
        """Copies of nodes (not the flow's inputs and outputs), placed `offset` from each original."""
        made = []
        for node_id in [n for n in nodes if n in self.flow.nodes()]:
            new_id = self.flow.duplicate(node_id)
            x, y = self.layout.get(node_id, free_spot(self.layout))
            self.layout[new_id] = (x + offset[0], y + offset[1])
            made.append(new_id)
        if made:
            self.selected = made[-1]
            self._changed(Message("info", "duplicated as " + ", ".join(made)))
        return made

    def rename(self, old: str, new: str) -> None:
        """A new id for a node, every reference rewritten; raises FlowError when `new` cannot be one."""
        self.flow.rename(old, new)
        if old in self.layout:
            self.layout[new] = self.layout.pop(old)
        if self.selected == old:
            self.selected = new
        self._changed(Message("info", f"renamed {old} to {new}"))

    def move(self, positions: Mapping[str, tuple[float, float]]) -> None:
        """Only the layout changes: the flow file stays as it is."""
        self.layout.update({k: v for k, v in positions.items() if k in self.layout})
        self.history.push(self._snapshot())

    def edit_config(self, node_id: str, changes: Mapping[str, Any]) -> None:
        self.flow.set_config(node_id, changes)
        self._changed()

    def edit_field(self, node_id: str, key: str, value: Any) -> None:
        self.flow.set_field(node_id, key, value)
        self._changed()

    def checked_edit(self, change: Callable[[], None]) -> str | None:
        """Run a form's edits as one step; when one raises or they add a problem, take them all back
        and return the message (the form shows it; the flow stays as it was)."""
        cursor, selected, snapshot = self.history.cursor, self.selected, self._snapshot()
        before = {p.message for p in self.problems}
        try:
            change()
        except FlowError as err:
            refused: str | None = f"{err.field}: {err.message}" if err.field else err.message
        else:
            new = [p for p in self.problems if p.message not in before]
            refused = f"{new[0].where.rsplit('/', 1)[-1]}: {new[0].message}" if new else None
        if refused is None:
            if self.history.cursor > cursor + 1:  # one Apply, one undo step
                del self.history.snapshots[cursor + 1 : self.history.cursor]
                self.history.cursor = cursor + 1
            return None
        self.flow.load(snapshot.text, data=self._check(snapshot.text))
        self.layout, self.selected = dict(snapshot.layout), selected
        del self.history.snapshots[cursor + 1 :]
        self.history.cursor = cursor
        self.message = Message("error", refused)
        self.version += 1
        return refused

    def edit_section(self, name: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """The flow's `inputs` or `models` become `entries` (see EditableFlow.set_section)."""
        self.flow.set_section(name, entries)
        self._changed()

    def edit_outputs(self, outputs: Mapping[str, str]) -> None:
        self.flow.set_outputs(outputs)
        self._changed()

    def replace_text(self, text: str) -> None:
        """The YAML tab's text becomes the flow (raises FlowError when it is not acceptable YAML)."""
        if text == self.flow.text:
            return
        self.flow.load(text)  # raises LoadError before anything changes
        self._changed()

    def undo(self) -> None:
        self._restore(self.history.undo())

    def redo(self) -> None:
        self._restore(self.history.redo())

    def _restore(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        self.flow.load(snapshot.text, data=self._check(snapshot.text))
        self.layout = dict(snapshot.layout)
        self.message = None
        self.version += 1

    # -- saving ------------------------------------------------------------------------------

    def save(self) -> list[Path]:
        """Write the flow file (when its text changed) and the layout sidecar; returns what was written."""
        written = []
        if self.flow.text != self.saved_text or not self.path.exists():
            write_file(self.path, self.flow.text)
            written.append(self.path)
        sidecar = sidecar_path(self.path)
        if self.layout != self.saved_layout or not sidecar.exists():
            write_file(sidecar, sidecar_text(self.path.stem, self.layout))
            written.append(sidecar)
        self.saved_text, self.saved_layout = self.flow.text, dict(self.layout)
        self._disk_stamp = _stamp(self.path)
        self.message = Message("info", "saved " + ", ".join(p.name for p in written) if written else "nothing to save")
        return written

    # -- drawing -----------------------------------------------------------------------------

    def graph(
        self,
        status: Mapping[str, str] | None = None,
        *,
        fit: bool = False,
        notes: Mapping[str, Mapping[str, str]] | None = None,
    ) -> dict[str, Any]:
        """The component's `graph` argument (`notes`: a run's per-node preview and error)."""
        nodes, edges = self._drawn(status, notes)
        return {
            "nodes": nodes,
            "edges": edges,
            "palette": palette(),
            "selected": self.selected,
            "message": {"level": self.message.level, "text": self.message.text} if self.message else None,
            "version": self.version,
            "ack": self.ack,
            "can_undo": self.history.can_undo,
            "can_redo": self.history.can_redo,
            "fit": fit,
        }
