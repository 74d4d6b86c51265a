"""Run lifecycle hooks: the events an engine emits and the shape of a hook.

A hook is called with keyword arguments only: `event`, `run_id`, then the event's details
(below). It takes `**future_kwargs`, so events may gain details without breaking it
(Hamilton's lifecycle hooks do the same).

- `run_started`: `plan` (the Plan about to run).
- `step_started`: `node` (the step's path, `map[2].summarise` inside sub-flows).
- `step_finished`: `step` (the StepRecord just written), `seconds`.
- `token`: `node`, `text` (a piece of a model reply as it streams).
- `waiting`: `node`, `prompt` (a step that waits for a person's value).
- `run_finished`: `status` (the run's final status).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, get_args

HookEvent = Literal["run_started", "step_started", "step_finished", "token", "waiting", "run_finished"]
"""Every event an engine emits to its hooks."""
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)


class Hook(Protocol):
    """Called once per event, from the engine's event loop: keep it quick and never raise."""

    def __call__(self, *, event: HookEvent, run_id: str, **future_kwargs: Any) -> None: ...
