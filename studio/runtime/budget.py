"""Run budgets: cost, tokens and steps, checked before each model call or step."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from studio.errors import NodeError


@dataclass
class Budget:
    """Limits of one run and what it has spent so far (resumed runs start from their totals)."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_steps: int | None = None
    cost: float = 0.0
    tokens: int = 0
    steps: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    """Held around each model call while a cost or token limit is set, so at most one
    call can cross the limit even when many nodes run at once."""

    @property
    def limits_calls(self) -> bool:
        return self.max_cost is not None or self.max_tokens is not None

    def before_call(self) -> None:
        """Refuse a call once a limit is reached, so a run overshoots by at most one call."""
        if self.max_cost is not None and self.cost >= self.max_cost:
            raise NodeError(f"budget exceeded: spent ${self.cost:.6f} of --max-cost {self.max_cost}", kind="budget")
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise NodeError(f"budget exceeded: used {self.tokens} of --max-tokens {self.max_tokens}", kind="budget")

    def before_step(self) -> None:
        """Raise NodeError(kind=budget) when --max-steps is reached."""
        if self.max_steps is not None and self.steps >= self.max_steps:
            raise NodeError(f"budget exceeded: ran {self.steps} of --max-steps {self.max_steps} steps", kind="budget")

    def charge(self, tokens: int, cost: float) -> None:
        """Count one model call's tokens and cost."""
        self.tokens += tokens
        self.cost += cost
