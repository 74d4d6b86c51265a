"""Typed errors. Each carries where the problem is: file, line, node and field."""

from __future__ import annotations

from typing import Literal, get_args

TransientKind = Literal["rate_limit", "timeout", "server", "bad_json"]
"""Model-call failures worth another attempt (after a backoff) on the same model."""
NotRetriedKind = Literal[
    "auth",
    "template_error",
    "bad_input",
    "budget",
    "bad_request",
    "no_model",
    "blocked",
    "limit",
    "invalid_output",
    "context_overflow",
]
"""Node failures a node's `retry:` does not attempt again: the next attempt would fail the same way."""
ErrorKind = Literal[
    TransientKind,
    NotRetriedKind,
    "node_error",
    "model_error",
    "missing_model",
    "load_failed",
    "bad_config",
    "bad_flow",
    "not_found",
    "tool_error",
    "unknown_tool",
    "too_large",
    "sub_flow",
    "no_sub_flows",
    "max_turns",
    "loop_limit",
    "http_status",
    "code_error",
    "exception",
    "waiting",
    "no_branch",
    "no_mcp",
    "mcp_connect",
    "mcp_error",
    "sandbox_unavailable",
]
"""Every failure class a step, a model call or a trace names (`NodeError.kind`, `ModelError.kind`,
`StepRecord.error_kind`)."""
TRANSIENT: frozenset[ErrorKind] = frozenset(get_args(TransientKind))
NOT_RETRIED: frozenset[ErrorKind] = frozenset(get_args(NotRetriedKind))


class FlowError(Exception):
    """Base of every error a user can cause. The CLI turns it into exit code 2."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        node: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.node = node
        self.field = field

    def where(self) -> str:
        """`flow.yaml:12` plus the field path, as far as known."""
        if self.file is None:
            return self.field or self.node or "input"
        place = self.file
        if self.line is not None:
            place += f":{self.line}"
        if self.field:
            place += f" at {self.field}"
        elif self.node:
            place += f" in node {self.node}"
        return place

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


class FlowWarning(FlowError):
    """A problem `flowstudio validate` reports without failing (exit 0): the flow runs, but likely
    not as its author meant. Never raised; printed as `warning: FILE:LINE at FIELD: message`."""


class LoadError(FlowError):
    """The file is not acceptable YAML (unsafe, too big, too deep, duplicate keys)."""


class SpecError(FlowError):
    """The document does not match the flow schema."""


class CompileError(FlowError):
    """The flow is well-formed but inconsistent: types, references, cycles."""


class NodeError(Exception):
    """A node failed at run time. `kind` names the failure class for traces."""

    def __init__(self, message: str, *, kind: ErrorKind = "node_error") -> None:
        super().__init__(message)
        self.kind = kind


class TemplateError(NodeError):
    """A template failed to render, or tried to leave the sandbox."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="template_error")


class InputError(FlowError):
    """A run was given inputs that do not match the flow's declared inputs."""


class OutputError(NodeError):
    """A model's reply stayed invalid after the node's re-asks; carries the last reply."""

    def __init__(self, message: str, *, reply: str, problem: str) -> None:
        super().__init__(message, kind="invalid_output")
        self.reply = reply
        self.problem = problem
