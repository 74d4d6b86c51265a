"""Dify's built-in tools that have a public HTTP API or a few lines of Python behind them.

A Dify `tool` node calls a provider's plugin; the ones below do what a `tool.http` request (or a
`code.python` node) does, so they import as that, approximated: the request is the provider's
documented public endpoint, and the response is the provider's raw answer, not Dify's digest of
it. Every other tool (search engines without a public API, payment or database plugins,
marketplace tools) stays not converted.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HttpTool:
    """A tool that is one HTTP request. Templates are Jinja; each tool parameter is a variable."""

    url: str
    """The request URL."""
    note: str
    """How the result differs from Dify's tool (shown as the approximation)."""
    method: str = "GET"
    """HTTP method."""
    body: str | None = None
    """The request body (JSON text), when there is one."""
    headers: dict[str, str] = field(default_factory=dict)
    """Headers; `$env.NAME` values are read from the environment when the node runs."""
    ports: dict[str, str] = field(default_factory=lambda: {"text": "text", "json": "data"})
    """Dify's output variables → tool.http's outputs."""


@dataclass(frozen=True)
class PythonTool:
    """A tool that is a few lines of standard-library Python (`result` is a dict of Dify's outputs)."""

    code: str
    """code.python source; tool configurations are available as variables of the same name."""
    note: str
    """How the result differs from Dify's tool."""


HTTP_TOOLS: dict[str, HttpTool] = {
    "jina_reader": HttpTool(
        url="https://r.jina.ai/{{ url }}",
        headers={"Accept": "text/plain"},
        note="sent to Jina Reader's public endpoint without an API key (rate-limited); add an "
        "`Authorization: Bearer $env.JINA_API_KEY` header for more",
    ),
    "webscraper": HttpTool(
        url="{{ url }}",
        note="returns the page as fetched (HTML), not Dify's extracted text",
    ),
    "wikipedia_search": HttpTool(
        url="https://{{ {'chinese': 'zh', 'japanese': 'ja', 'french': 'fr', 'german': 'de', 'spanish': 'es'}"
        ".get(language | lower, 'en') }}.wikipedia.org/w/rest.php/v1/search/page?limit=3&q={{ query | urlencode }}",
        note="returns Wikipedia's search results as JSON (titles and excerpts), not Dify's page summary",
    ),
    "tavily_search": HttpTool(
        url="https://api.tavily.com/search",
        method="POST",
        body='{{ {"query": query, "max_results": max_results | default(5)} | tojson }}',
        headers={"Authorization": "$env.TAVILY_API_KEY", "Content-Type": "application/json"},
        note="Tavily's API answers JSON (the `data` output); set TAVILY_API_KEY to `Bearer tvly-...`",
    ),
}

PYTHON_TOOLS: dict[str, PythonTool] = {
    "current_time": PythonTool(
        code=(
            "from datetime import datetime, timezone\n"
            "try:\n"
            "    from zoneinfo import ZoneInfo\n"
            "    zone = ZoneInfo(timezone_name or 'UTC')\n"
            "except Exception:\n"
            "    zone = timezone.utc\n"
            "result = {'text': datetime.now(zone).strftime(time_format or '%Y-%m-%d %H:%M:%S')}\n"
        ),
        note="the time zone comes from the sandbox's zoneinfo data; UTC when it has none",
    ),
}

PYTHON_CONFIG = {"format": "time_format", "timezone": "timezone_name"}
"""Tool configurations passed to Python tools, by the variable name the code reads."""
