"""`llm.structured`'s repair loop: ask for the object, and send a reply that does not parse or
validate back with the problem, up to `retries` times; then fail with an OutputError that shows
the last reply.

How the object is asked for (`method`): `tool` where the model picks tools natively (a forced
call whose arguments are the object), `prefill` where a completion-form prompt would be sent as
a user message but the provider continues an assistant turn (Anthropic's protocol), else
`text` in the configured form.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from nodes import json_object
from nodes.json_object import TOOL, first_object
from nodes.prompting import Form
from studio.node import Completion, Message, NodeContext, OutputError, model_supports, render

LABEL = "JSON:"
Method = Literal["tool", "prefill", "text"]
"""How the object is asked for (see the module's docstring)."""


class Settings(Protocol):
    """The node's config fields the loop reads (`llm.structured`'s Config)."""

    prompt: str
    instructions: str
    system: str
    demos: list[dict[str, Any]]
    form: Form
    retries: int
    max_tokens: int | None


def method(ctx: NodeContext, form: Form) -> Method:
    """How the object is asked for on `ctx.llm`'s model (unknown capabilities: `text`)."""
    if model_supports(ctx.llm, "function_calling") is True:
        return "tool"
    return "prefill" if form == "completion" and model_supports(ctx.llm, "prefill") is True else "text"


def prompts(config: Settings, schema: dict[str, Any], values: dict[str, Any], chat: bool) -> tuple[list[Message], str]:
    """The chat messages and the completion text that ask for the object (the text ends in `LABEL`)."""
    c = config
    preamble = "\n\n".join(
        p for p in (render(c.system, values), render(c.instructions, values), json_object.describe(schema)) if p
    )
    messages = [Message("system", preamble)] if chat else []
    text = preamble
    for demo in c.demos:
        answer = json.dumps(demo["data"], ensure_ascii=False)
        if chat:
            messages += [Message("user", render(c.prompt, demo)), Message("assistant", answer)]
        else:
            text += f"\n\n{render(c.prompt, demo)}\n{LABEL} {answer}"
    question = render(c.prompt, values)
    messages.append(Message("user", question))
    return messages, f"{text}\n\n{question}\n{LABEL}"


async def ask_object(config: Settings, schema: dict[str, Any], values: dict[str, Any], ctx: NodeContext) -> Any:
    """The first reply's object that validates against `schema`; OutputError after `retries` more tries."""
    c = config
    how = method(ctx, c.form)
    messages, text = prompts(c, schema, values, chat=c.form == "chat" or how == "tool")
    opening = json_object.opening(schema)
    if how == "prefill":  # the completion prompt as a user turn, the answer begun as the assistant's
        messages = [Message("user", text), Message("assistant", opening)]
    text += f" {opening}"
    reply, problem = "", ""
    for _ in range(c.retries + 1):
        completion, reply = await _ask(c, schema, how, ctx, messages, text, opening)
        try:
            data = first_object(reply)
            found = json_object.problem(schema, data)
        except ValueError as err:
            found = str(err)
        if found is None:
            return data
        problem = found + (" (the reply was cut off at max_tokens)" if completion.finish_reason == "length" else "")
        retry = f"That reply is invalid: {problem}. Write the corrected JSON object."
        if how == "prefill":
            messages = [*messages[:-1], Message("assistant", reply), Message("user", retry), messages[-1]]
        else:
            messages += [Message("assistant", reply), Message("user", retry)]
        text += f"{reply[len(opening) :]}\nError: {problem}. Corrected:\n{LABEL} {opening}"
    shown = reply if len(reply) <= 500 else reply[:500] + "…"
    raise OutputError(
        f"no valid object after {c.retries + 1} tries: {problem}; last reply: {shown}", reply=reply, problem=problem
    )


async def _ask(
    c: Settings, schema: dict[str, Any], how: Method, ctx: NodeContext, messages: list[Message], text: str, opening: str
) -> tuple[Completion, str]:
    """One call by `how`; returns it and the reply as the object's text."""
    stop = ["\n\n", f"\n{LABEL}"]
    if how == "tool":
        forced = {"type": "function", "function": {"name": TOOL}}
        extra = {"tools": [json_object.answer_tool(schema)], "tool_choice": forced}
        completion = await ctx.llm.complete(messages=messages, max_tokens=c.max_tokens, extra=extra)
        calls = [call for call in completion.tool_calls or [] if call.get("name") == TOOL]
        reply = json.dumps(calls[0].get("arguments"), ensure_ascii=False) if calls else completion.text.strip()
        return completion, reply
    if how == "prefill":
        completion = await ctx.llm.complete(messages=messages, stop=stop, max_tokens=c.max_tokens)
        reply = completion.text.rstrip()
        # a provider may answer with the whole object, the begun part repeated
        return completion, reply.lstrip() if reply.lstrip().startswith("{") else opening + reply
    if c.form == "chat":
        completion = await ctx.llm.complete(messages=messages, max_tokens=c.max_tokens)
        return completion, completion.text.strip()
    completion = await ctx.llm.complete(prompt=text, stop=stop, max_tokens=c.max_tokens)
    return completion, opening + completion.text.rstrip()
