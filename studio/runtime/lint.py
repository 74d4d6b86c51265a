"""What `flowstudio validate` warns about: a flow that compiles but will likely fail or
misbehave, on this machine or under the readiness rule.

Each check takes a compiled plan and returns `FlowWarning`s (file, line, field, message); a
new check is one more entry in `CHECKS`. Warnings never fail `validate` (exit 0): commands
that run a flow refuse only what they must (`model_checks.require_models`).
"""

from __future__ import annotations

from collections.abc import Callable

from studio.errors import FlowWarning
from studio.runtime import gather_checks, model_checks
from studio.runtime.compiler import Plan

Check = Callable[[Plan], list[FlowWarning]]
CHECKS: tuple[Check, ...] = (
    model_checks.capability_warnings,
    model_checks.model_problems,
    gather_checks.warnings,
)
"""Every check `flow_warnings` runs, in the order their warnings print."""


def flow_warnings(plan: Plan) -> list[FlowWarning]:
    """Every check's warnings about `plan`."""
    return [warning for check in CHECKS for warning in check(plan)]
