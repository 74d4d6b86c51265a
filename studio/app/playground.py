"""The Playground, docked beside the canvas: the flow's input form (or a chat for a flow with one
text input and one text output), Run, the outputs when it ends, the error of the failing node, a
waiting human.input answered in place, and the inputs and outputs of the node selected on the canvas. The canvas shows each node's status,
streamed tokens and error while it runs (`notes`)."""

from __future__ import annotations

import asyncio
from typing import Any

import streamlit as st

from studio.app.editor_run import EditorRun, start_run
from studio.app.input_fields import input_value, input_widget
from studio.app.links import trace_page
from studio.app.resume_panel import answer_error, answer_fields, answer_values
from studio.app.settings import open_store, settings
from studio.app.widgets import badge, ident, show_value
from studio.editor.editor import Editor
from studio.errors import FlowError
from studio.flow.spec import Flow
from studio.store.base import StepRecord

PREVIEW_CHARS = 240
"""How much of a node's streamed or produced text the canvas shows (its end)."""


def run_key(editor: Editor) -> str:
    return f"run:{editor.path}"


def notes(current: EditorRun | None) -> dict[str, dict[str, str]]:
    """Per node, for the canvas: the streamed text (or its first text output), and its step's error."""
    if current is None:
        return {}
    found: dict[str, dict[str, str]] = {}
    for node, text in current.tokens.items():
        found.setdefault(node, {})["preview"] = text[-PREVIEW_CHARS:]
    for node, step in current.steps.items():
        produced = next((v for v in (step.outputs or {}).values() if isinstance(v, str)), None)
        if produced and node not in current.tokens:
            found.setdefault(node, {})["preview"] = produced[-PREVIEW_CHARS:]
    for node, error in current.node_errors().items():
        found.setdefault(node, {})["run_error"] = error
    return found


def chat_ports(flow: Flow) -> tuple[str, str] | None:
    """(input, output) when the flow takes one text input and gives one output: it can be a chat."""
    inputs, outputs = flow.spec.inputs, flow.spec.outputs
    if len(inputs) != 1 or len(outputs) != 1:
        return None
    (name, spec), (output,) = next(iter(inputs.items())), list(outputs)
    return (name, str(output)) if spec.type.replace(" ", "") in ("str", "str|null") else None


def _start(editor: Editor, values: dict[str, Any]) -> None:
    if editor.dirty:
        editor.save()
    nodes = [str(n) for n in editor.flow.nodes()]
    st.session_state[run_key(editor)] = start_run(editor.path, values, nodes, settings().db)
    # no rerun here: the rest of this script run shows the new run, and the page redraws when it changes


def _input_key(editor: Editor, name: str) -> str:
    return f"run_input:{editor.path}:{name}"


def _form(editor: Editor, flow: Flow) -> None:
    """The flow's inputs; the toolbar's Run starts the run with them (one Run button)."""
    if st.session_state.pop(ASK, False):
        st.info("Fill in the inputs, then Run (in the toolbar).", icon=":material/edit:")
    else:
        st.caption(
            "Run (in the toolbar) starts the flow with these inputs" + (", saving it first." if editor.dirty else ".")
        )
    for name, spec in flow.spec.inputs.items():
        input_widget(name, spec, key=_input_key(editor, name))


ASK = "playground_ask"
"""Set when Run was pressed before the Playground's inputs were filled in: the form asks for them."""


def run_from_toolbar(editor: Editor) -> bool:
    """Start a run with the Playground's inputs (the flow saved first); False, and nothing started,
    while a required input has not been filled in there yet."""
    flow = editor.checked
    if flow is None:
        return False
    values: dict[str, Any] = {}
    for name, spec in flow.spec.inputs.items():
        key = _input_key(editor, name)
        if key in st.session_state:
            values[name] = input_value(spec, st.session_state[key])
        elif spec.required:
            st.session_state[ASK] = True
            return False
    _start(editor, values)
    return True


def _chat(editor: Editor, ports: tuple[str, str], current: EditorRun | None) -> None:
    """A conversation kept per flow: each message is one run; its answer joins when the run ends."""
    history: list[dict[str, str]] = st.session_state.setdefault(f"chat:{editor.path}", [])
    if current is not None and current.done and history and history[-1]["role"] == "user":
        answer = (current.outputs or {}).get(ports[1])
        history.append({"role": "assistant", "text": str(answer) if answer is not None else current.error or ""})
    for message in history:
        with st.chat_message(message["role"]):
            st.text(message["text"])
    if current is not None and not current.done:
        with st.chat_message("assistant"):
            st.text(next(iter(current.tokens.values()), "…"))
    text = st.chat_input("Message", key=f"chat_input:{editor.path}", disabled=current is not None and not current.done)
    if text:
        history.append({"role": "user", "text": text})
        _start(editor, {ports[0]: text})


def _ended(current: EditorRun) -> None:
    if not current.done:
        done = sum(s not in ("pending", "running") for s in current.statuses.values())
        st.caption(f"Running… {done} of {len(current.statuses)} nodes done")
        _streaming(current)
        return
    st.markdown(f"Run {badge(current.status)}")
    failed = current.node_errors()
    for node, error in failed.items():
        st.error(f"{node}: {error}", icon=":material/error:")
    if current.error and not failed and current.status != "waiting":  # waiting is said by the form below
        st.error(current.error)
    if current.outputs:
        st.markdown("**Outputs**")
        for name, value in current.outputs.items():
            st.markdown(ident(name))
            show_value(value)
    if current.run_id and st.button(f"Open trace ({current.status})", key="editor_open_trace"):
        st.switch_page(trace_page(), query_params={"run": current.run_id})


def _streaming(current: EditorRun) -> None:
    """The text each running node has streamed so far (its end), as it arrives."""
    for node, text in list(current.tokens.items()):
        if current.statuses.get(node) == "running":
            with st.container(key=f"streaming_{node}"):
                st.markdown(f"{ident(node)} streaming")
                st.text(text[-PREVIEW_CHARS:])


def _waiting_steps(run_id: str) -> list[StepRecord]:
    with open_store() as store:
        steps = store.steps(run_id)
    done = {s.node for s in steps if s.status == "succeeded"}
    return [s for s in steps if s.status == "waiting" and s.node not in done and "[" not in s.node]


def _answer_in_place(current: EditorRun) -> None:
    """A run waiting at human.input nodes: what each asks, an answer field each, Resume (the run goes on here)."""
    asks = _waiting_steps(current.run_id or "")
    if not asks:
        return
    with st.form(f"answer_{current.run_id}", border=True):
        st.markdown("**Waiting for input**")
        answers = answer_fields(asks, f"answer_{current.run_id}")
        if not st.form_submit_button("Resume", type="primary"):
            return
    from studio.runtime.runner import resume_run_async

    try:
        result = asyncio.run(resume_run_async(current.run_id or "", values=answer_values(answers), db=settings().db))
    except FlowError as err:
        st.error(answer_error(err))
        return
    with open_store() as store:
        for step in store.steps(result.run_id):
            if step.node in current.statuses:
                current.statuses[step.node] = step.status
                current.steps[step.node] = step
    current.outputs, current.error, current.status = result.outputs, result.error, result.status
    st.rerun()


def _selected_step(editor: Editor, current: EditorRun) -> None:
    node = editor.selected
    step = current.steps.get(node) if node else None
    if node is None:
        st.caption("Click a node on the canvas to see its inputs and outputs.")
        return
    if step is None:
        st.caption(f"{node}: no step yet in this run.")
        return
    st.markdown(f"**{ident(node)}** {badge(step.status)}")
    inputs_tab, outputs_tab = st.tabs(["Inputs", "Outputs"])
    with inputs_tab:
        show_value(step.inputs)
    with outputs_tab:
        show_value(step.error if step.status == "failed" else step.outputs)


def render_playground(editor: Editor) -> None:
    """Inputs (or chat), Run, then what the run gave; the canvas colours the nodes meanwhile."""
    current: EditorRun | None = st.session_state.get(run_key(editor))
    if editor.checked is None:
        st.warning("Fix the flow's problems to run it.", icon=":material/build:")
        return
    ports = chat_ports(editor.checked)
    chat = ports is not None and st.toggle("Chat", value=False, key=f"chat_mode:{editor.path}")
    if chat and ports is not None:
        _chat(editor, ports, current)
    else:
        _form(editor, editor.checked)
    current = st.session_state.get(run_key(editor))  # the run the form may just have started
    if current is None:
        return
    st.divider()
    _ended(current)
    if current.status == "waiting" and current.run_id:
        _answer_in_place(current)
    _selected_step(editor, current)
