"""Driving the Editor page's canvas from Playwright: handles, drags and the component's frame."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CANVAS_FRAME = '[data-stale="false"] iframe[title="studio.app.canvas.flow_canvas"]'
"""The canvas of this script run (Streamlit keeps a stale one on screen while it swaps them)."""
WAIT_MS = 20_000


def canvas(page: Any) -> Any:
    """The canvas component's frame."""
    return page.frame_locator(CANVAS_FRAME)


def port(page: Any, node: str, side: str, name: str) -> Any:
    return canvas(page).get_by_test_id(f"port-{node}-{side}-{name}")


def drag(page: Any, source: Any, target: Any, *, release: bool = True) -> None:
    """Press on `source`, move in steps (React Flow tracks the pointer), release on `target`
    (or leave the button down, for a caller that times the release)."""
    start, end = source.bounding_box(), target.bounding_box()
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=12)
    if release:
        page.mouse.up()


def confirmed(page: Any) -> None:
    """Wait until Python's graph holds every edit the canvas drew ahead of it: cards may change
    (a port marked wired, an error) when it comes, so a drag measured before could miss its port."""
    from playwright.sync_api import expect

    expect(canvas(page).get_by_test_id("canvas-root")).to_have_attribute("data-unconfirmed", "0", timeout=WAIT_MS)


def wire(page: Any, source: tuple[str, str], target: tuple[str, str], edges: int) -> None:
    """Drag from an output port to an input port and wait until the canvas shows `edges` edges,
    and Python's graph holds them."""
    from playwright.sync_api import expect

    confirmed(page)
    drag(page, port(page, *source[:1], "out", source[1]), port(page, *target[:1], "in", target[1]))
    expect(canvas(page).locator(".react-flow__edge")).to_have_count(edges, timeout=WAIT_MS)
    confirmed(page)


def add_from_palette(page: Any, node_type: str, node_id: str) -> None:
    from playwright.sync_api import expect

    canvas(page).get_by_test_id(f"palette-item-{node_type}").click()
    expect(canvas(page).get_by_test_id(f"node-{node_id}")).to_be_visible(timeout=WAIT_MS)
    confirmed(page)
    canvas(page).get_by_test_id("canvas-fit").click()


def _steps_flow(name: str, prefix: str, n: int, source: Callable[[int], str], llm_every: tuple[int, int]) -> str:
    """`n` text.template steps named PREFIX0.., step i reading `source(i)`, an llm.generate where
    i % llm_every[0] == llm_every[1]; the flow output reads the last step."""
    lines = ["flowstudio: 1", f"name: {name}", "inputs:", "  text: {type: str}", "outputs:"]
    lines += [f"  text: ${prefix}{n - 1}.text"]
    lines += ["models:", "  default: {model: local/smollm2, temperature: 0, max_tokens: 20}", "nodes:"]
    for i in range(n):
        wire = "$inputs.text" if i == 0 else source(i)
        lines += [f"  {prefix}{i}:"]
        if i % llm_every[0] == llm_every[1]:
            lines += ["    type: llm.generate", f"    inputs: {{text: {wire}}}", "    config:"]
            lines += [f'      prompt: "Step {i}: {{{{ text }}}}"']
        else:
            lines += ["    type: text.template", f"    inputs: {{text: {wire}}}"]
            lines += [f'    config: {{template: "{{{{ text }}}} {i}"}}']
    return "\n".join(lines) + "\n"


def big_flow(n: int) -> str:
    """A flow of `n` nodes: a tree of text.template steps with an llm.generate every tenth."""
    return _steps_flow("big", "n", n, lambda i: f"$n{(i - 1) // 2 if i % 3 == 0 else i - 1}.text", (10, 5))


def chain_flow(n: int) -> str:
    """A flow of `n` nodes in one line (each feeds the next), an llm.generate every fifth: the widest
    layout a flow of `n` nodes can have."""
    return _steps_flow("chain", "c", n, lambda i: f"$c{i - 1}.text", (5, 4))


PROMPT_EDITOR = ".st-key-editor_inspector iframe[title*='code_editor']"
"""The Inspector's prompt editor (the kept code-editor component, Ace) of an LLM node."""


def fill_prompt(page: Any, text: str) -> None:
    """Replace the selected LLM node's prompt with `text` (typed as one input, so Ace pairs no brace);
    the editor hands its text to the form when it loses focus, as Apply's click makes it."""
    from playwright.sync_api import expect

    editor = page.frame_locator(PROMPT_EDITOR).locator("#REACT_ACE_EDITOR .ace_content")
    expect(editor).to_be_visible(timeout=WAIT_MS)
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
