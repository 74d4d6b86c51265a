"""`/docs`: the OpenAPI document as one self-contained HTML page.

FastAPI's Swagger UI and ReDoc load their scripts from a CDN, so they show nothing offline and
need a second, token-less request for `/openapi.json`. This page needs neither: the server
renders every operation and its schemas into plain HTML, escaped, with no script.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
h2{border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
.op{border:1px solid #d0d7de;border-radius:6px;margin:1rem 0;padding:.6rem 1rem}
.method{font-weight:700;text-transform:uppercase;margin-right:.6rem}
code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;border-radius:6px}
details summary{cursor:pointer}
"""


def docs_page(openapi: dict[str, Any]) -> str:
    """The whole page: title, one section per tag, one box per operation, then the schemas."""
    info = openapi.get("info", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>",
        "<p>The machine-readable document is at <code>/openapi.json</code>.</p>",
    ]
    for path, methods in sorted(openapi.get("paths", {}).items()):
        for method, operation in methods.items():
            parts.append(_operation(path, method, operation))
    schemas = openapi.get("components", {}).get("schemas", {})
    if schemas:
        parts.append("<h2>Schemas</h2>")
        parts.extend(_block(name, schema) for name, schema in sorted(schemas.items()))
    parts.append("</body></html>")
    return "".join(parts)


def _operation(path: str, method: str, operation: dict[str, Any]) -> str:
    summary = operation.get("summary", "")
    description = operation.get("description", "")
    lines = [
        f"<div class=op><div><span class=method>{escape(method)}</span><code>{escape(path)}</code>",
        f" — {escape(summary)}</div>" if summary else "</div>",
    ]
    if description and description != summary:
        lines.append(f"<p>{escape(description)}</p>")
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        lines.append(_block("Request body", body))
    for status, answer in operation.get("responses", {}).items():
        lines.append(f"<div><code>{escape(str(status))}</code> {escape(answer.get('description', ''))}</div>")
    lines.append("</div>")
    return "".join(lines)


def _block(label: str, schema: Any) -> str:
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    return f"<details><summary>{escape(label)}</summary><pre>{escape(text)}</pre></details>"
