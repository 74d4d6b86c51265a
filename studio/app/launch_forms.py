"""The forms that start a batch or an optimizer search from the Experiments page.

Each start is a separate process (`studio.app.launches`); the page only builds its command
line: the flow from the studio's folder, a dataset picked from the folder or uploaded, the
column mapping, the metric and the limits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app import launches
from studio.app.settings import settings
from studio.editor.files import SKIP_DIRS, flow_files
from studio.errors import FlowError
from studio.evaluate.datasets import read_rows
from studio.flow.spec import Flow, load_flow
from studio.models import catalogue

METRICS = ["exact", "contains", "f1", "regex", "json_match", "llm_judge"]
NONE = "(none)"
UPLOAD = "upload a file…"
AS_IN_FLOW = ""
"""The model override that keeps the flow's own model."""
DATA_SUFFIXES = (".jsonl", ".csv")


def data_files(folder: Path) -> list[Path]:
    """JSONL and CSV files in `folder` and two levels below (not hidden ones), then uploads."""
    found = [*folder.glob("*"), *folder.glob("*/*"), *folder.glob("*/*/*")]
    chosen = []
    for path in sorted(found):
        parts = path.relative_to(folder).parts
        if any(p.startswith(".") or p in SKIP_DIRS for p in parts) or path.suffix not in DATA_SUFFIXES:
            continue
        if path.is_file():
            chosen.append(path)
    uploads = launches.launch_dir(settings().db) / "uploads"
    return chosen + (sorted(uploads.glob("*")) if uploads.is_dir() else [])


def save_upload(name: str, data: bytes) -> Path:
    """An uploaded dataset, kept beside the database so the started process can read it."""
    if not name.endswith(DATA_SUFFIXES):
        raise ValueError("upload a .jsonl or .csv file")
    folder = launches.launch_dir(settings().db) / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / Path(name).name
    target.write_bytes(data)
    return target


def columns_of(path: Path) -> list[str]:
    """The dataset's columns (empty when it cannot be read; the started process says why)."""
    try:
        return read_rows(path)[1]
    except FlowError:
        return []


def _stamp(path: Path) -> int:
    """The file's modification time, for caching what was read of it (0 when it is gone)."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_data(show_spinner=False, max_entries=512)
def _inputs(path: str, stamp: int) -> tuple[str, ...]:
    """A flow's input names (none when it does not load); cached per file version."""
    try:
        return tuple(load_flow(Path(path)).spec.inputs)
    except FlowError:
        return ()


@st.cache_data(show_spinner=False, max_entries=512)
def _columns(path: str, stamp: int) -> tuple[str, ...]:
    """`columns_of`, cached per file version."""
    return tuple(columns_of(Path(path)))


def fitting(flow: Path, datasets: list[Path]) -> list[Path]:
    """The datasets with a column for each of the flow's inputs, so that a form can open on a pair
    that runs (none when the flow does not load)."""
    names = set(_inputs(str(flow), _stamp(flow)))
    return [d for d in datasets if names and names <= set(_columns(str(d), _stamp(d)))]


def _named(fits: list[Path], split: str) -> Path | None:
    """The first of `fits` whose file name says `split` (`qa-dev.jsonl` for `dev`)."""
    return next((d for d in fits if split in d.stem), None)


def mapping_args(flow: Flow, columns: list[str], key: str) -> list[str]:
    """A column for each flow input and an expected column for each output, as --map/--expect."""
    args: list[str] = []
    if not columns:
        return args
    st.markdown("**Columns** (flow input ← dataset column; flow output compared with a column)")
    left, right = st.columns(2)
    with left:
        for name in flow.spec.inputs:
            options = [NONE, *columns]
            index = options.index(name) if name in columns else 0
            column = st.selectbox(f"input `{name}`", options, index=index, key=f"{key}_map_{name}")
            if column != NONE:
                args += ["--map", f"{name}={column}"]
    with right:
        for name in flow.spec.outputs:
            options = [NONE, *columns]
            guess = (
                name if name in columns else next((c for c in ("expected", "answer", "label") if c in columns), None)
            )
            index = options.index(guess) if guess else 0
            column = st.selectbox(f"expected `{name}`", options, index=index, key=f"{key}_expect_{name}")
            if column != NONE:
                args += ["--expect", f"{name}={column}"]
    return args


def model_overrides(flow: Flow, key: str) -> list[str]:
    """For each model alias of the flow, the model to run it on instead (as `--model ALIAS=MODEL`);
    the flow's own by default, another picked from the common ones or typed."""
    args: list[str] = []
    aliases = flow.spec.models
    if not aliases:
        return args
    offered = catalogue.common()
    columns = st.columns(min(3, len(aliases)))
    for index, (alias, spec) in enumerate(aliases.items()):
        options = [AS_IN_FLOW, *[m for m in offered if m != spec.model]]
        chosen = columns[index % len(columns)].selectbox(
            f"Model for `{alias}`", options, key=f"{key}_model_{alias}", accept_new_options=True,
            format_func=_shown_model(spec.model),
            help="Run the batch on another model without editing the flow (`--model ALIAS=MODEL`); type any other.",
        )  # fmt: skip
        if chosen and chosen != AS_IN_FLOW:
            args += ["--model", f"{alias}={str(chosen).strip()}"]
    return args


def _shown_model(own: str) -> Callable[[str], str]:
    return lambda model: f"as in the flow: {own}" if model == AS_IN_FLOW else model


def _dataset(
    label: str, key: str, files: list[Path], folder: Path, *, optional: bool = False, default: Path | None = None
) -> Path | None:
    names = {str(p): _shown(p, folder) for p in files}
    options = ([NONE] if optional else []) + list(names) + [UPLOAD]
    index = options.index(str(default)) if default is not None and str(default) in options else 0
    choice = st.selectbox(label, options, index=index, key=key, format_func=lambda o: names.get(o, o))
    if choice == NONE:
        return None
    if choice != UPLOAD:
        return Path(choice)
    uploaded = st.file_uploader(f"{label}: JSONL or CSV", type=["jsonl", "csv"], key=f"{key}_upload")
    if uploaded is None:
        return None
    try:
        return save_upload(uploaded.name, uploaded.getvalue())
    except (OSError, ValueError) as err:
        st.error(str(err))
        return None


def _shown(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return f"uploaded: {path.name}"


def _flow(key: str, folder: Path, datasets: list[Path]) -> tuple[Path, Flow] | None:
    """The flow picker, opening on the first flow some dataset can feed."""
    files = flow_files(folder)
    if not files:
        st.info(f"No flow files in {folder}.")
        return None
    index = next((i for i, f in enumerate(files) if fitting(f, datasets)), 0)
    path = st.selectbox("Flow", files, index=index, key=f"{key}_flow", format_func=lambda p: str(p.relative_to(folder)))
    try:
        return path, load_flow(path)
    except FlowError as err:
        st.error(f"{path.name} does not load: {err}")
        return None


def _started(record: launches.Launch) -> None:
    st.query_params.pop("experiment", None)
    st.query_params["launch"] = record.token
    st.toast(f"Started {record.kind} (process {record.pid})")
    st.rerun()


def batch_form() -> None:
    """Flow, dataset, columns, metric, concurrency; Start runs `flowstudio batch` in the background."""
    folder = settings().flows_dir
    files = data_files(folder)
    chosen = _flow("batch", folder, files)
    if chosen is None:
        return
    path, flow = chosen
    data = _dataset("Dataset", "batch_data", files, folder, default=next(iter(fitting(path, files)), None))
    if data is None:
        st.caption("Pick a dataset or upload one.")
        return
    args = ["--data", str(data), *mapping_args(flow, columns_of(data), "batch")]
    left, middle, right = st.columns(3)
    metric = left.selectbox("Metric", [*METRICS, NONE], key="batch_metric")
    concurrency = middle.number_input("Concurrency", min_value=1, max_value=64, value=4, key="batch_concurrency")
    limit = right.number_input(
        "Limit (first N examples)", min_value=0, value=0, key="batch_limit", help="0: every example of the dataset."
    )
    if metric != NONE:
        args += ["--metric", metric]
    args += ["--concurrency", str(int(concurrency))]
    if limit:
        args += ["--limit", str(int(limit))]
    args += model_overrides(flow, "batch")
    if st.button("Start batch", type="primary", key="start_batch"):
        _started(launches.start(settings().db, "batch", str(path), args, cwd=folder))


def _splits(flow: Path, files: list[Path], folder: Path) -> tuple[Path | None, Path | None, Path | None]:
    """The train, dev and (optional) test pickers, each opening on a file that fits the flow and is
    named for its split; a word when train and dev are the same file."""
    fits = fitting(flow, files)
    first = next(iter(fits), None)
    train = _dataset(
        "Train set (demos are drawn from it)", "search_train", files, folder, default=_named(fits, "train") or first
    )
    dev = _dataset(
        "Dev set (candidates are scored on it)", "search_dev", files, folder, default=_named(fits, "dev") or first
    )
    test = _dataset(
        "Test set (held out, for the report)", "search_test", files, folder, optional=True, default=_named(fits, "test")
    )
    if train is not None and train == dev:
        st.caption(
            "Train and dev are the same file: the search splits it, every third example for dev, so that no "
            "demo is an example the candidates are scored on."
        )
    return train, dev, test


def search_form() -> None:
    """Flow, train/dev/test, columns, metric, budget in calls and USD, proposer; Start runs `flowstudio optimize`."""
    folder = settings().flows_dir
    files = data_files(folder)
    chosen = _flow("search", folder, files)
    if chosen is None:
        return
    path, flow = chosen
    train, dev, test = _splits(path, files, folder)
    if train is None or dev is None:
        st.caption("Pick a train and a dev set.")
        return
    args: list[Any] = ["--train", str(train), "--dev", str(dev)]
    if test is not None:
        args += ["--test", str(test)]
    args += mapping_args(flow, columns_of(dev), "search")
    one, two, three, four = st.columns(4)
    metric = one.selectbox("Metric", METRICS, key="search_metric")
    calls = two.number_input("Budget (model calls)", min_value=1, value=100, key="search_calls")
    usd = three.number_input("Budget (USD, 0: none)", min_value=0.0, value=0.0, format="%.4f", key="search_usd")
    proposer = four.text_input(
        "Proposer alias", value="", key="search_proposer", help="Empty: `proposer`, else `default`."
    )
    args += ["--metric", metric, "--budget-calls", str(int(calls))]
    if usd > 0:
        args += ["--budget-usd", str(usd)]
    if proposer.strip():
        args += ["--proposer", proposer.strip()]
    out = path.with_name(f"{path.stem}.optimized.yaml")
    args += ["--out", str(out)]
    if st.button("Start search", type="primary", key="start_search"):
        _started(launches.start(settings().db, "optimize", str(path), [str(a) for a in args], cwd=folder))


def render(*, expanded: bool = False) -> None:
    """The two start forms, folded away until wanted unless `expanded` (a first visit)."""
    with st.expander("Start a batch or a search", expanded=expanded):
        batch_tab, search_tab = st.tabs(["Batch evaluation", "Optimizer search"])
        with batch_tab:
            batch_form()
        with search_tab:
            search_form()
