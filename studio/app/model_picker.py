"""The flow's model aliases in the Editor: one alias at a time, its model chosen from a list (the
embedded model, the scripted one, the providers litellm knows and their models; any other string is
typed), its parameters as typed fields, and the model checked on Apply as `flowstudio models check`
checks it: a model that cannot work here (an unknown local model, a provider litellm does not know)
is refused at Apply, with nothing changed; a provider that cannot be reached from here (no key in
this environment, no network) is applied with the check's answer beside it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st
from pydantic import ValidationError

from studio.editor.editor import Editor
from studio.editor.fields import plain
from studio.errors import FlowError
from studio.flow.spec import ModelSpec
from studio.models import catalogue

CHECK_S = 15.0
"""Longest the check on Apply waits for the model's answer."""
ENV = "$env."
DEFAULT_MODEL = "local/smollm2"
NO_SCRIPT = (
    "a scripted model answers from its script: write `script:` rules under the alias in the YAML view, "
    "or name a script file as scripted/PATH"
)
ANY = "*"
"""A note shown whichever alias is picked (after one was removed)."""
_NOTE = "model_pick_note"
"""Session key of the last Apply's outcome: (editor version, alias, kind, words)."""
_NAMES = {catalogue.LOCAL: "local — the embedded model", catalogue.SCRIPTED: "scripted — replies from a script"}


def render(editor: Editor) -> None:
    """The alias picker, its provider and model lists and parameter fields, Apply, then all aliases."""
    section: Mapping[str, Any] = editor.flow.section("models")
    aliases = [str(a) for a in section] or ["default"]
    alias = str(
        st.selectbox("alias", aliases, accept_new_options=True, key="model_pick_alias", help="Type a name to add one.")
    )
    kept = plain(section.get(alias)) if isinstance(section.get(alias), Mapping) else {}
    current = str(kept.get("model") or DEFAULT_MODEL)
    provider = _provider(editor, alias, current)
    wanted = _form(editor, alias, provider, current, kept)
    if wanted is not None:
        _apply(editor, alias, wanted, section)
    _note(editor, alias)
    if alias in section:
        _remove(editor, alias, section)
    _overview(section)


def _remove(editor: Editor, alias: str, section: Mapping[str, Any]) -> None:
    """A button that removes the alias (refused while a node uses it)."""
    if not st.button(f"Remove alias {alias}", key=f"model_pick_remove-{editor.version}-{alias}", type="tertiary"):
        return
    rest = {str(a): plain(v) for a, v in section.items() if str(a) != alias}
    refused = editor.checked_edit(lambda: editor.edit_section("models", rest))
    _remember(
        editor.version, ANY if not refused else alias, "refused" if refused else "ok", refused or f"Removed {alias}."
    )
    if not refused:
        st.session_state.pop("model_pick_alias", None)
    st.rerun()


def _provider(editor: Editor, alias: str, current: str) -> str:
    """The provider list (outside the form, so the model list follows it), opening on the alias' own."""
    options = catalogue.providers()
    own = catalogue.provider_of(current)
    if own not in options:
        options = [own, *options]
    return str(
        st.selectbox(
            "provider",
            options,
            index=options.index(own),
            key=f"model_pick_provider-{editor.version}-{alias}",
            format_func=lambda p: _NAMES.get(p, p or "(none: a bare model name)"),
            help="Where the model runs: built in, or a provider litellm knows (its key from the environment).",
        )
    )


def _form(editor: Editor, alias: str, provider: str, current: str, kept: Mapping[str, Any]) -> dict[str, Any] | None:
    """The model and its parameters; the alias' new settings when Apply was pressed, else None."""
    key = f"model-pick-{editor.version}-{alias}-{provider}"
    options = catalogue.models_of(provider)
    if catalogue.provider_of(current) == provider and current not in options:
        options = [current, *options]
    with st.form(key, border=True):
        model = st.selectbox(
            "model", options, index=options.index(current) if current in options else 0, accept_new_options=True,
            key=f"{key}-model", help="Pick one, or type any provider/model string litellm takes.",
        )  # fmt: skip
        left, right = st.columns(2)
        temperature = left.number_input(
            "temperature", 0.0, 2.0, _number(kept.get("temperature")), step=0.1, key=f"{key}-temperature",
            placeholder="default", help="0: the same answer each time, where the model allows.",
        )  # fmt: skip
        max_tokens = right.number_input(
            "max_tokens", 1, 1_000_000, _whole(kept.get("max_tokens")), key=f"{key}-max_tokens",
            placeholder="default", help="The longest reply, in tokens.",
        )  # fmt: skip
        with st.expander("Connection and limits"):
            values = _more(key, kept)
        if not st.form_submit_button("Apply model", type="primary"):
            return None
    return {"model": str(model or "").strip(), "temperature": temperature, "max_tokens": max_tokens, **values}


def _more(key: str, kept: Mapping[str, Any]) -> dict[str, Any]:
    """The connection (api_base, the key's environment variable) and the call limits."""
    api_key = str(kept.get("api_key") or "")
    left, right = st.columns(2)
    values: dict[str, Any] = {
        "api_base": left.text_input(
            "api_base", str(kept.get("api_base") or ""), key=f"{key}-api_base",
            help="Base URL of an OpenAI-compatible server; empty: the provider's own.",
        ),
        "api_key": right.text_input(
            "api_key (environment variable)", api_key.removeprefix(ENV), key=f"{key}-api_key",
            help="The NAME of the environment variable holding the key, e.g. OPENAI_API_KEY (never the key).",
        ),
    }  # fmt: skip
    left, right = st.columns(2)
    values["timeout_s"] = left.number_input(
        "timeout_s", 1.0, 3600.0, float(kept.get("timeout_s") or 120.0), key=f"{key}-timeout_s",
        help="Longest one attempt may take.",
    )  # fmt: skip
    values["retries"] = right.number_input(
        "retries", 0, 10, _whole(kept.get("retries")) or 0 if "retries" in kept else 2, key=f"{key}-retries",
        help="Extra attempts after a rate limit, timeout or server error.",
    )  # fmt: skip
    return values


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _whole(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def settings(kept: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The alias' mapping: what the form does not show stays (a script, prices), what it shows is
    written when set, defaults left out of the file."""
    result = {k: v for k, v in kept.items() if k not in wanted}
    api_key = str(wanted.get("api_key") or "").strip()
    given = {
        "model": wanted.get("model"),
        "temperature": wanted.get("temperature"),
        "max_tokens": wanted.get("max_tokens"),
        "api_base": str(wanted.get("api_base") or "").strip() or None,
        "api_key": (ENV + api_key.removeprefix(ENV)) if api_key else None,
        "timeout_s": wanted.get("timeout_s") if wanted.get("timeout_s") not in (None, 120.0) else None,
        "retries": wanted.get("retries") if wanted.get("retries") not in (None, 2) else None,
    }
    return result | {k: v for k, v in given.items() if v is not None}


def _apply(editor: Editor, alias: str, wanted: Mapping[str, Any], section: Mapping[str, Any]) -> None:
    """Check the alias' new settings, then write them as one undoable step; a refusal changes nothing."""
    kept = plain(section.get(alias)) if isinstance(section.get(alias), Mapping) else {}
    entry = settings(kept, wanted)
    try:
        spec = ModelSpec.model_validate(entry)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "model"
        _remember(editor.version, alias, "refused", f"{where}: {first['msg']}")
        return
    with st.spinner(f"Checking {spec.model}…"):
        refused, note = verdict(alias, spec, editor.path.parent)
    if refused:
        _remember(editor.version, alias, "refused", refused)
        return
    new = {str(a): plain(v) for a, v in section.items()} | {alias: entry}
    flow_refused = editor.checked_edit(lambda: editor.edit_section("models", new))
    kind = "refused" if flow_refused else "warning" if note.startswith("Applied") else "ok"
    _remember(editor.version, alias, kind, flow_refused or note)
    st.rerun()


def verdict(alias: str, spec: ModelSpec, base_dir: Path) -> tuple[str | None, str]:
    """(why the alias is refused, or None; what its check said), from `flowstudio models check`'s
    tiny call, bounded so Apply never waits long: what cannot work anywhere is refused, a provider
    this machine cannot reach is only reported."""
    from studio.models.check import check

    if spec.model == catalogue.SCRIPTED and not spec.script:
        return NO_SCRIPT, ""
    quick = spec.model_copy(update={"retries": 0, "timeout_s": min(spec.timeout_s, CHECK_S), "rate_limit_wait_s": 0})
    try:
        result = asyncio.run(asyncio.wait_for(check(alias, quick, base_dir), CHECK_S + 5))
    except FlowError as err:
        return f"{spec.model}: {err.message}", ""
    except TimeoutError:
        return None, f"Applied, but {spec.model} did not answer its check within {CHECK_S:.0f} s."
    if result.error is None:
        caps = ", ".join(result.capabilities) or "none known"
        return None, f"{alias}: {spec.model} answered its check in {result.latency_s:.2f} s ({caps})."
    if result.provider == catalogue.LOCAL:
        return f"{spec.model} failed its check: {result.error}", ""
    if result.provider == catalogue.SCRIPTED:  # its script may fail on purpose (a fault drill): only say so
        return None, f"Applied. Its script answers the check's prompt with an error: {result.error}."
    if result.provider == "unknown":
        return (
            f"litellm knows no provider for {spec.model!r}: write provider/model, e.g. openai/gpt-4o-mini "
            "(ollama/..., an OpenAI-compatible server as openai/NAME with api_base)",
            "",
        )
    return None, (
        f"Applied, but its check failed here: {result.error}. Runs on {alias} fail until that is fixed "
        "(a key in the environment, a server at api_base)."
    )


def _remember(version: int, alias: str, kind: str, words: str) -> None:
    """Keep Apply's outcome for the page at editor version `version` (after the edit, for a success)."""
    st.session_state[_NOTE] = (version, alias, kind, words)


def _note(editor: Editor, alias: str) -> None:
    note = st.session_state.get(_NOTE)
    if not note or note[0] != editor.version or note[1] not in (alias, ANY):
        return
    kind, words = note[2], note[3]
    if kind == "refused":
        st.error(f"Not applied: {words}", icon=":material/block:")
    elif kind == "warning":
        st.warning(words, icon=":material/warning:")
    else:
        st.success(words, icon=":material/check:")


def _overview(section: Mapping[str, Any]) -> None:
    """Every alias in one read-only table (pick one above to change it)."""
    rows = []
    for alias, spec in section.items():
        spec = spec if isinstance(spec, Mapping) else {}
        shown = {k: "default" if spec.get(k) is None else str(spec.get(k)) for k in ("temperature", "max_tokens")}
        rows.append({"alias": str(alias), "model": str(spec.get("model") or "")} | shown)
    if rows:
        st.dataframe(rows, hide_index=True, key="model_aliases_table", width="stretch")
