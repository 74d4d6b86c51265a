"""Capability checks of a plan: nodes that need what their model (per litellm) does not offer.

`flowstudio validate` prints these as warnings: the flow is valid, but a node will fail or
fall back to a weaker method on the model it is bound to, and no fallback alias helps.
"""

from __future__ import annotations

from studio.flow.spec import ModelSpec
from studio.models import client_for
from studio.models.capabilities import Capabilities
from studio.runtime.compiler import Plan, PlanNode


def _capabilities(spec: ModelSpec, plan: Plan) -> Capabilities | None:
    try:
        client = client_for(spec, plan.flow.base_dir)
    except Exception:
        return None
    check = getattr(client, "capabilities", None)
    return check() if check else None


def needs(node: PlanNode) -> list[tuple[tuple[str, ...], str]]:
    """What a node needs: (any one of these capabilities, what for)."""
    config = node.node.config
    if node.type == "llm.agent" and getattr(config, "protocol", "auto") == "functions":
        return [(("function_calling",), "calls tools by function calling (protocol: functions)")]
    if node.type == "llm.classify":
        return [
            (
                ("logprobs", "constrained"),
                "scores labels by logprobs or a constrained answer; without either it reads the label from "
                "free text and confidence is null",
            )
        ]
    return []


def capability_warnings(plan: Plan) -> list[str]:
    """One line per node whose model, and every fallback alias, lacks a capability it needs."""
    found: dict[str, Capabilities | None] = {}
    warnings = []
    for node_id, node in plan.nodes.items():
        if node.model is None:
            continue
        aliases = [node.model, *plan.models[node.model].fallbacks]
        for alias in aliases:
            if alias not in found:
                found[alias] = _capabilities(plan.models[alias], plan)
        for wanted, purpose in needs(node):
            known = [found[a] for a in aliases if found[a] is not None]
            if not known or any(getattr(c, name) for c in known for name in wanted):
                continue
            model = plan.models[node.model].model
            lacks = " or ".join(name.replace("_", " ") for name in wanted)
            warnings.append(
                f"node {node_id} ({node.type}) {purpose}; {model} has no {lacks} (per litellm) "
                f"and no fallback alias has it"
            )
    return warnings
