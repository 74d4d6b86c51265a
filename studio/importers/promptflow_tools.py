"""Prompt flow's package tools (`source: {type: package, tool: ...}`) approximated by built-ins.

Only tools whose job a built-in node does are mapped, each with a note on what differs:
embeddings become hashed word-count vectors (lexical, not semantic), a vector-index lookup
becomes full-text search (`retrieve.fts`, over an index the user builds), Azure AI Language
tools become an `llm.generate` prompt asking the model for the same analysis, and LLMLingua's
compression passes the prompt through uncompressed. Every other package tool is not converted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from studio.importers.report import NodeReport
from studio.runtime.registry import with_role

if TYPE_CHECKING:
    from studio.importers.promptflow_ctx import Ctx

EMBEDDING_CODE = """import hashlib
import math
import re

DIMENSIONS = 256
vector = [0.0] * DIMENSIONS
for word in re.findall(r"\\w+", str(text).lower()):
    vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
norm = math.sqrt(sum(v * v for v in vector)) or 1.0
result = [v / norm for v in vector]
"""
"""A hashed bag-of-words vector of `text`, unit length (cosine similarity = lexical overlap)."""

LANGUAGE_TASKS = {
    "language_detection": "Name the language of the text: answer with its name and ISO 639-1 code.",
    "key_phrase_extraction": "List the key phrases of the document, one per line.",
    "pii_entity_recognition": "Rewrite the document with every piece of personal information replaced by *.",
    "conversational_pii": "Rewrite the conversation with every piece of personal information replaced by *.",
    "entity_recognition": "List the named entities of the document, one per line as `entity: category`.",
    "extractive_summarization": "Quote the document's most important sentences, one per line.",
    "abstractive_summarization": "Summarize the document.",
    "conversation_summarization": "Summarize the conversation (the aspect is given below).",
    "sentiment_analysis": "Say whether the document's sentiment is positive, neutral, negative or mixed.",
    "translator": "Translate the text into the language(s) given below.",
    "conversational_language_understanding": "Give the intent and the entities of each utterance, as JSON.",
}
"""Azure AI Language tool module → the instruction an LLM is given instead."""


def package_kind(node: dict[str, Any]) -> str | None:
    """The Prompt flow node kind whose output port a converted package tool has (None: not mapped)."""
    tool = str((node.get("source") or {}).get("tool") or "")
    if tool.endswith(".chat") and "OpenAI" in tool:
        return "llm"
    mapper = _mapper(tool)
    return None if mapper is None else mapper[0]


def convert_package(ctx: Ctx, node: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    """The built-in node standing for a package tool; None (refused in the report) when none fits."""
    tool = str((node.get("source") or {}).get("tool") or (node.get("source") or {}).get("type"))
    mapper = _mapper(tool)
    if mapper is None:
        entry.refuse(f"tool from a package ({tool}): no built-in equivalent")
        return None
    given = {k: v for k, v in (node.get("inputs") or {}).items() if k not in ("connection", "myconn")}
    return mapper[1](ctx, tool, given, entry)


Mapper = Callable[["Ctx", str, dict[str, Any], NodeReport], dict[str, Any]]


def _mapper(tool: str) -> tuple[str, Mapper] | None:
    if tool == "promptflow.tools.embedding.embedding":
        return "python", _embedding
    if tool.startswith("promptflow_vectordb.") and tool.endswith(".search"):
        return "retrieve", _index_lookup
    if tool.startswith("language_tools.tools."):
        return "llm", _language
    if tool.startswith("llmlingua_promptflow.") and tool.endswith(".prompt_compress"):
        return "prompt", _compress
    return None


def _embedding(ctx: Ctx, tool: str, given: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    entry.approximate(
        f"embedding ({given.get('deployment_name') or 'model'}) becomes a hashed word-count vector: "
        "similarities between such vectors are lexical, not semantic"
    )
    return {
        "type": with_role("python_code"),
        "inputs": {"text": ctx.wire(given.get("input"))},
        "config": {"code": EMBEDDING_CODE},
    }


def _index_lookup(ctx: Ctx, tool: str, given: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    entry.approximate(
        "the vector index lookup becomes full-text search (BM25): build the index with "
        "`flowstudio index DOCS --table documents --db index.db`; results are {path, title, text, score}"
    )
    top_k = given.get("top_k")
    config: dict[str, Any] = {"table": "documents", "db": "index.db"}
    if isinstance(top_k, int) and 1 <= top_k <= 100:
        config["limit"] = top_k
    return {"type": with_role("retrieve"), "inputs": {"query": ctx.wire(given.get("queries"))}, "config": config}


def _language(ctx: Ctx, tool: str, given: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    module = tool.split(".")[2] if tool.count(".") >= 2 else tool
    task = LANGUAGE_TASKS.get(module, f"Perform {module.replace('_', ' ')} on the input.")
    entry.approximate(
        f"Azure AI Language ({module}) becomes an llm.generate prompt asking for the same analysis: "
        "the reply is the model's text, not the service's JSON"
    )
    inputs = {k: ctx.wire(v) for k, v in given.items() if k != "parse_response"}
    lines = [task, ""] + [f"{k}: {{{{ {k} }}}}" for k in inputs]
    spec: dict[str, Any] = {"type": with_role("completion"), "inputs": inputs, "config": {"prompt": "\n".join(lines)}}
    alias = ctx.b.alias("openai/gpt-4o-mini", None, f"stands in for Azure AI Language's {module}")
    if alias:
        spec["model"] = alias
    return spec


def _compress(ctx: Ctx, tool: str, given: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    entry.approximate("LLMLingua's prompt compression is not built in: the prompt passes through uncompressed")
    return {
        "type": with_role("template"),
        "inputs": {"prompt": ctx.wire(given.get("prompt"))},
        "config": {"template": "{{ prompt }}"},
    }
