"""What a Dify node converter reads of the graph being converted (`dify_ctx.Ctx`), so that the
converters the context itself asks (an agent's or a list operator's ports) need not import it."""

from __future__ import annotations

from typing import Any, Protocol

from studio.importers.build import FlowBuilder


class Wiring(Protocol):
    """The conversion in progress: the flow being built, and Dify references read as wires."""

    b: FlowBuilder

    def wire(self, selector: Any) -> Any:
        """A Dify value selector (`[node_id, var, ...]`) as a wire."""
        ...

    def template(self, text: str, inputs: dict[str, Any]) -> str:
        """Dify text with `{{#node.var#}}` references → a Jinja template; the wires go to `inputs`."""
        ...
