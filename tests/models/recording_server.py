"""A tiny HTTP listener for provider tests: records each request, answers from a reply list.

    python -m tests.models.recording_server PORT REPLIES.json LOG.jsonl

REPLIES.json is a list of `{"status": 200, "headers": {...}, "body": {...}}`, served in order
(the last one repeats). Each request is appended to LOG.jsonl as `{"path", "headers", "body"}`.
It stands in for a provider's HTTP API, never for our code: litellm builds and sends the
request exactly as it would to the real service.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def main() -> None:
    port, replies_path, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(replies_path, encoding="utf-8") as handle:
        replies: list[dict[str, Any]] = json.load(handle)
    served = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._answer({"status": 200, "body": {"status": "ok"}}, record=False)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8") if length else ""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw
            entry = {"path": self.path, "headers": dict(self.headers), "body": body}
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
            reply = replies[min(served[0], len(replies) - 1)]
            served[0] += 1
            self._answer(reply)

        def _answer(self, reply: dict[str, Any], record: bool = True) -> None:
            data = json.dumps(reply.get("body", {})).encode()
            self.send_response(int(reply.get("status", 200)))
            self.send_header("content-type", "application/json")
            for name, value in (reply.get("headers") or {}).items():
                self.send_header(name, str(value))
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
