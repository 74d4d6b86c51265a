"""tool.http: requests to an allowed local server; private, loopback and link-local targets refused.

Nothing here sends traffic beyond 127.0.0.1: refused targets are refused before any connection.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nodes import tool_http
from tests.nodes.runner import run_flow


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {
            "/json": (200, {}, json.dumps({"ok": True, "path": self.path}).encode()),
            "/hop": (302, {"Location": "/json?from=hop"}, b""),
            "/metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
            "/loop": (302, {"Location": "/loop"}, b""),
            "/big": (200, {}, b"x" * 5000),
            "/fail": (500, {}, b"broken"),
        }
        status, headers, body = routes.get(self.path.split("?")[0], (404, {}, b"no"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        reply = json.dumps(
            {"got": json.loads(body), "host": self.headers["Host"], "token": self.headers.get("X-Token")}
        )
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


FLOW = """
inputs: {url: {type: str}, body: {type: any, default: null}}
outputs: {status: $get.status, data: $get.data, text: $get.text, url: $get.url}
nodes:
  get:
    type: tool.http
    inputs: {url: $inputs.url, body: $inputs.body}
    config: CONFIG
"""
ALLOW = "{allow_hosts: [127.0.0.1], max_bytes: 1000}"


async def _get(url: str, config: str = ALLOW, body: object = None) -> tuple[dict[str, object] | None, str | None]:
    result, store = await run_flow(FLOW.replace("CONFIG", config), {"url": url, "body": body})
    kind = store.steps(result.run_id)[0].error_kind
    return result.outputs, (f"{kind}: {result.error}" if result.error else None)


async def test_allowed_local_host(server: str) -> None:
    outputs, error = await _get(server + "/json")
    assert error is None
    assert outputs == {
        "status": 200,
        "data": {"ok": True, "path": "/json"},
        "text": '{"ok": true, "path": "/json"}',
        "url": server + "/json",
    }


async def test_redirects_are_followed_and_checked(server: str) -> None:
    outputs, _ = await _get(server + "/hop")
    assert (
        outputs
        and outputs["data"] == {"ok": True, "path": "/json?from=hop"}
        and outputs["url"] == server + "/json?from=hop"
    )
    _, error = await _get(server + "/metadata")
    assert error and error.startswith("blocked: ") and "169.254.169.254, a link-local address" in error
    _, error = await _get(server + "/loop", "{allow_hosts: [127.0.0.1], max_redirects: 2}")
    assert error and "more than 2 redirects" in error


async def test_post_json_with_configured_headers(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_TOKEN", "s3cret")
    config = "{method: POST, allow_hosts: [127.0.0.1], headers: {X-Token: $env.TEST_TOKEN}}"
    outputs, error = await _get(server + "/echo", config, body={"n": 1})
    assert error is None and outputs
    assert outputs["status"] == 201
    assert outputs["data"] == {"got": {"n": 1}, "host": server.removeprefix("http://"), "token": "s3cret"}


async def test_limits_and_status(server: str) -> None:
    _, error = await _get(server + "/big")
    assert error == "too_large: node 'get' failed: response larger than max_bytes (1000)"
    _, error = await _get(server + "/fail")
    assert error and error.startswith("http_status: ") and "HTTP 500" in error
    outputs, _ = await _get(server + "/fail", "{allow_hosts: [127.0.0.1], fail_on_status: false}")
    assert outputs and outputs["status"] == 500 and outputs["text"] == "broken"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:9/", "127.0.0.1, a loopback address"),
        ("http://localhost:9/", "a loopback address"),
        ("http://10.0.0.1/", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a link-local address"),
        ("http://[::1]:9/", "::1, a loopback address"),
        ("http://[::ffff:127.0.0.1]:9/", "a loopback address"),
        ("http://[fe80::1]/", "a link-local address"),
        ("http://2130706433:9/", "127.0.0.1, a loopback address"),
        ("http://0x7f000001:9/", "127.0.0.1, a loopback address"),
        ("http://0.0.0.0:9/", "an unspecified address"),
        ("http://100.64.0.1/", "a non-global address"),
    ],
)
async def test_internal_targets_are_refused(url: str, reason: str) -> None:
    _, error = await _get(url, "{}")
    assert error and error.startswith("blocked: ") and reason in error, error


async def test_allowing_one_host_allows_only_that_spelling(server: str) -> None:
    _, error = await _get(server.replace("127.0.0.1", "2130706433") + "/json")
    assert error and error.startswith("blocked: ")


async def test_a_name_that_resolves_inside_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def rebinding(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.1.2.3"]

    monkeypatch.setattr(tool_http, "resolve", rebinding)
    _, error = await _get("https://intranet.example/", "{}")
    assert error and "intranet.example resolves to 10.1.2.3, a private address" in error


async def test_other_schemes_are_refused() -> None:
    _, error = await _get("file:///etc/passwd", "{}")
    assert error and error.startswith("bad_input: ") and "only http and https" in error


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("2002:7f00:1::1", "loopback"),
        ("64:ff9b::a00:1", "private"),
        ("224.0.0.1", "multicast"),
    ],
)
def test_why_not_public(address: str, reason: str | None) -> None:
    assert tool_http.why_not_public(address) == reason
