"""`chat.append`: add one turn to a conversation (`messages`), so flows can carry chat state."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from studio.node import ChatTurn, Messages, Node, NodeContext


class Append(Node):
    """A new conversation is the given one (or an empty one) plus this turn."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        role: Literal["system", "user", "assistant"] = "user"
        """Who speaks in the appended turn."""

    class Inputs(BaseModel):
        messages: Messages | None = None
        """The conversation so far; unwired, null or from a skipped node starts a new one."""
        content: str
        """The text of the new turn."""

    class Outputs(BaseModel):
        messages: Messages
        """The conversation with the new turn last."""

    config: Config

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        turn: ChatTurn = {"role": self.config.role, "content": inputs.content}
        return self.Outputs(messages=[*(inputs.messages or []), turn])
