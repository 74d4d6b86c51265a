"""How far dev can lead a search on `ticket`'s classifier: the same prompts, scored on dev and test.

`ticket`'s test split negates with `never` and `hardly`, which neither train nor dev shows
(studio.evaluate.tasks). This script asks the embedded model to classify the true quotes (the
words a perfect extractor would copy) under 9 prompts: 3 preambles (the flow's instructions;
the same with DSPy's line naming the labels; DSPy's signature sentence with that line) by 3 demo
sets (none; 2 positive and 2 negative train quotes; 4 negative ones, as BFSRS's bootstrap keeps
them), each decided 3 ways (greedy text, first-token argmax, calibrated as `llm.classify` does).
Per seed it prints every prompt's dev and test accuracy, then the test score of the prompt a
search would keep (best on dev, ties to the first) and the rank correlation of dev with test.

Run (from the repository root, about 5 minutes on 2 cores):
    .venv/bin/python bench/ticket_ceiling.py --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodes.calibration import CONTENT_FREE, calibrate, content_free_prior, label_mass  # noqa: E402
from studio.evaluate.tasks import generate  # noqa: E402
from studio.models import local  # noqa: E402
from studio.models.base import Request  # noqa: E402

LABELS = ["positive", "negative"]
INSTRUCTIONS = "Is this customer's message positive or negative?"
NAMED = "Label: one of: positive, negative."
PREAMBLES = {
    "flow": INSTRUCTIONS,
    "flow+named": f"{INSTRUCTIONS}\n{NAMED}",
    "signature+named": f"Given the fields `text`, produce the fields `label`.\n{NAMED}",
}
"""The preambles: the flow's instructions, DSPy's template adapter's (instructions, then the
labels named), and DSPy's default sentence with the labels named."""
DECISIONS = ("text", "argmax", "calibrated")
SIZES = {"train": 24, "dev": 30, "test": 40}

Quote = tuple[str, str]
Top = dict[str, float]


def quotes(split: str, seed: int) -> list[Quote]:
    """The split's true quotes and labels."""
    found = []
    for example in generate("ticket", split, SIZES[split], seed):
        match = re.search(r'"([^"]*)"', example["text"])
        found.append((match.group(1) if match else example["text"], example["label"]))
    return found


def demo_sets(train: list[Quote], seed: int) -> dict[str, list[Quote]]:
    """No demos; two of each label; four negative ones."""
    rng = random.Random(seed)
    positive = [q for q in train if q[1] == "positive"]
    negative = [q for q in train if q[1] == "negative"]
    balanced = rng.sample(positive, 2) + rng.sample(negative, 2)
    rng.shuffle(balanced)
    return {"none": [], "2+2": balanced, "4 negative": rng.sample(negative, 4)}


def prompt(preamble: str, demos: list[Quote], text: str) -> str:
    """A completion prompt as `llm.classify` and DSPy's template adapter both write it."""
    parts = [preamble, *(f"Text: {t}\nLabel: {label}" for t, label in demos), f"Text: {text}\nLabel:"]
    return "\n\n".join(parts)


def ask(text: str) -> tuple[str, Top]:
    """The model's greedy reply and its first position's top tokens."""
    request = Request(prompt=text, max_tokens=8, stop=("\n",), extra={"top_logprobs": 100})
    completion = local._complete_sync(request)
    return completion.text, (completion.top_logprobs[0] if completion.top_logprobs else {})


def deciders(prior: dict[str, float]) -> dict[str, Callable[[str, Top], str]]:
    """The three ways to read a label off one answer."""

    def text(reply: str, top: Top) -> str:
        words = re.findall(r"[a-z]+", reply.lower())
        return words[0] if words else ""

    def argmax(reply: str, top: Top) -> str:
        mass = label_mass(top, LABELS)
        return max(LABELS, key=lambda label: mass[label])

    def calibrated(reply: str, top: Top) -> str:
        mass = label_mass(top, LABELS)
        shares = calibrate({label: mass[label] or 1e-9 for label in LABELS}, prior)
        return max(LABELS, key=lambda label: shares[label])

    return {"text": text, "argmax": argmax, "calibrated": calibrated}


def accuracy(preamble: str, demos: list[Quote], data: list[Quote]) -> dict[str, float]:
    """Each decision's accuracy on `data` under one prompt."""
    prior = content_free_prior([ask(prompt(preamble, demos, text))[1] for text in CONTENT_FREE], LABELS)
    decide = deciders(prior)
    right = dict.fromkeys(DECISIONS, 0)
    for text, label in data:
        reply, top = ask(prompt(preamble, demos, text))
        for name in DECISIONS:
            right[name] += decide[name](reply, top) == label
    return {name: right[name] / len(data) for name in DECISIONS}


def ranks(values: list[float]) -> list[float]:
    """Average ranks (ties share theirs)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    found = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            found[order[k]] = (i + j) / 2
        i = j + 1
    return found


def spearman(xs: list[float], ys: list[float]) -> float:
    """Rank correlation of two lists."""
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var if var else 0.0


def one_seed(seed: int) -> None:
    """Print one seed's table and what a search on dev would keep."""
    dev, test = quotes("dev", seed), quotes("test", seed)
    rows = []
    for demo_name, demos in demo_sets(quotes("train", seed), seed).items():
        for preamble_name, preamble in PREAMBLES.items():
            on_dev, on_test = accuracy(preamble, demos, dev), accuracy(preamble, demos, test)
            for name in DECISIONS:
                rows.append((f"{preamble_name}, demos {demo_name}, {name}", on_dev[name], on_test[name]))
                print(f"| {seed} | {rows[-1][0]} | {on_dev[name]:.3f} | {on_test[name]:.3f} |", flush=True)
    kept = max(rows, key=lambda row: row[1])
    tests = [row[2] for row in rows]
    print(
        f"| {seed} | **kept on dev: {kept[0]}** | {kept[1]:.3f} | {kept[2]:.3f} "
        f"(range {min(tests):.3f}-{max(tests):.3f}, Spearman dev~test {spearman([r[1] for r in rows], tests):+.2f}) |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated task seeds")
    args = parser.parse_args()
    print("| seed | prompt, demos, decision | dev | test |\n|---|---|---|---|")
    for seed in (int(s) for s in args.seeds.split(",")):
        one_seed(seed)


if __name__ == "__main__":
    main()
