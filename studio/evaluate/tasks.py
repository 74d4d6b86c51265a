"""Seeded generators of small labelled tasks, for measuring flows (and the embedded model).

- `sentiment`: short reviews, positive or negative, half of them negated ("was not great");
- `topic`: one-sentence news items in four classes (sports, business, science, politics);
- `arithmetic`: one-to-two digit sums, differences and products, answer as digits;
- `extraction`: a sentence about a person → JSON with name, age and city;
- `ticket` (two steps, extract then classify): a support ticket quoting a customer's review
  among a ticket number, a name, a city and a channel → positive or negative; only the final
  label is given, never the quoted words (bench/flows/ticket.yaml: copy the words, classify them);
- `order` (three steps, two extractors and a calculator): a sentence about an order → the total
  price, as digits; only the total is given (bench/flows/order.yaml: read the quantity, read the
  unit price, multiply them with the calculator tool).

No leakage between splits: every word pool (adjectives, nouns, topic keywords, names,
cities, numbers) and every sentence template is divided into three disjoint parts, one each
for train, dev and test. A test example therefore never shares a template or a content word
with a train example, so a flow cannot score by having memorised its demos. The division is
fixed; `seed` only changes which examples are drawn from a split's pools.

    python -m studio.evaluate.tasks sentiment --out data/ --sizes 50,50,100 --seed 0
"""

from __future__ import annotations

import argparse
import functools
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

SPLITS = ("train", "dev", "test")
T = TypeVar("T")

POSITIVE = (
    "great", "wonderful", "excellent", "delightful", "superb", "fantastic", "lovely", "brilliant", "charming",
    "enjoyable", "pleasant", "impressive", "marvelous", "terrific", "outstanding", "splendid", "fabulous",
    "amazing",
)  # fmt: skip
NEGATIVE = (
    "awful", "terrible", "dreadful", "boring", "poor", "disappointing", "horrible", "bland", "dull", "mediocre",
    "tedious", "lousy", "miserable", "unpleasant", "clumsy", "shoddy", "annoying", "forgettable",
)  # fmt: skip
SUBJECTS = (
    "movie", "meal", "hotel", "concert", "book", "service", "phone", "game", "show", "trip", "album", "class",
    "museum", "app", "restaurant", "play", "lecture", "camera",
)  # fmt: skip
AFFIRMED = (
    "The {noun} was {adj}.",
    "I found the {noun} {adj}.",
    "What a {adj} {noun}!",
    "This {noun} is {adj}.",
    "Honestly, the {noun} felt {adj}.",
    "Our {noun} turned out {adj}.",
)
NEGATED = (
    "The {noun} was not {adj}.",
    "I did not find the {noun} {adj}.",
    "This {noun} is not {adj} at all.",
    "The {noun} was never {adj}.",
    "Nobody would call the {noun} {adj}.",
    "Our {noun} was hardly {adj}.",
)

TOPICS: dict[str, tuple[str, ...]] = {
    "sports": (
        "striker", "goalkeeper", "marathon", "tournament", "referee", "playoffs", "quarterback", "stadium",
        "championship", "coach", "penalty kick", "relay race", "slam dunk", "batting average", "world cup",
    ),
    "business": (
        "shareholders", "quarterly earnings", "merger", "stock market", "startup", "investors", "revenue",
        "dividend", "supply chain", "layoffs", "acquisition", "retail sales", "venture capital", "profit margin",
        "bond yields",
    ),
    "science": (
        "telescope", "laboratory", "molecule", "vaccine trial", "fossil", "genome", "particle accelerator",
        "astronomers", "chemists", "experiment", "galaxy", "climate model", "microscope", "neurons", "spacecraft",
    ),
    "politics": (
        "senator", "parliament", "election", "ballot", "prime minister", "legislation", "campaign", "governor",
        "referendum", "diplomats", "coalition government", "voters", "cabinet", "opposition party", "policy debate",
    ),
}  # fmt: skip
NEWS = (
    "Today's news: the {a} and the {b}.",
    "A long article about the {a} caught my eye, especially the part on the {b}.",
    "Experts discussed the {a} and what it means for the {b}.",
    "The {a} made headlines again, along with the {b}.",
    "Fresh updates on the {a} arrived this morning, plus a note on the {b}.",
    "Local radio spent an hour on the {a} and the {b}.",
    "My friend keeps sending me stories about the {a} and the {b}.",
    "The evening bulletin opened with the {a}, then turned to the {b}.",
    "A podcast episode covered the {a} in detail and mentioned the {b}.",
)

SUMS = ("What is {a} plus {b}?", "Add {a} and {b}.", "{a} + {b} =")
DIFFERENCES = ("What is {a} minus {b}?", "Subtract {b} from {a}.", "{a} - {b} =")
PRODUCTS = ("What is {a} times {b}?", "Multiply {a} by {b}.", "{a} * {b} =")

NAMES = (
    "Alice", "Bruno", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hugo", "Irene", "Jonas", "Keiko", "Liam",
    "Maya", "Nikolai", "Olivia", "Pedro", "Quinn", "Rosa", "Samir", "Tessa", "Umar", "Vera", "Wendell",
    "Ximena", "Yusuf", "Zoe", "Anton", "Beatrix", "Cyrus", "Delia",
)  # fmt: skip
CITIES = (
    "Lisbon", "Oslo", "Nairobi", "Denver", "Kyoto", "Porto", "Tallinn", "Quito", "Perth", "Dublin", "Seville",
    "Toronto", "Hanoi", "Zurich", "Bergen", "Cairo", "Austin", "Lyon", "Krakow", "Santiago", "Leeds", "Osaka",
    "Bilbao", "Tunis",
)  # fmt: skip
PROFILES = (
    "Hi, I'm {name}, {age} years old, living in {city}.",
    "{name} ({age}) moved to {city} last year.",
    "Name: {name}. Age: {age}. Home town: {city}.",
    "Meet {name} from {city}, who just turned {age}.",
    "At {age}, {name} still calls {city} home.",
    "{city} resident {name}, aged {age}, wrote to us.",
)

CHANNELS = (
    "mail", "telephone", "chat", "fax", "letter", "the web form", "text message", "the kiosk", "email",
)  # fmt: skip
TICKETS = (
    'Ticket {num} from {name} in {city}: "{words}" (sent by {channel})',
    'Support case {num}. Customer {name} ({city}) wrote via {channel}: "{words}"',
    'Case {num}, opened by {name} of {city} through {channel}, reads "{words}"',
    'Feedback {num} received by {channel} from {name}, {city}: "{words}"',
    '{name} from {city} sent note {num} by {channel}, saying "{words}"',
    'Message {num} ({channel}) - {name}, {city} - "{words}"',
)
ITEMS = (
    "lamps", "chairs", "mugs", "books", "pens", "towels", "candles", "plates", "shirts", "baskets", "pillows",
    "clocks", "bottles", "notebooks", "cables", "jars", "brushes", "maps",
)  # fmt: skip
ORDERS = (
    "{name} bought {q} {items} at {p} dollars each.",
    "{name} ordered {q} {items}; each one costs {p} dollars.",
    "For the shop, {name} picked up {q} {items}, priced at {p} dollars apiece.",
    "Order from {name}: {items}, quantity {q}, unit price {p} dollars.",
    "{name} needs {q} {items} and pays {p} dollars for every one.",
    "Invoice for {name}: {q} {items}, {p} dollars per item.",
)
QUANTITIES = range(2, 14)
PRICES = range(14, 100)
"""Disjoint ranges, so that no number can be both a quantity and a price in any split."""


def part(pool: Sequence[T], split: str) -> tuple[T, ...]:
    """The split's share of a pool: a fixed third, disjoint from the other splits' shares."""
    return _shares(tuple(pool))[SPLITS.index(split)]


@functools.lru_cache(maxsize=64)
def _shares(pool: tuple[T, ...]) -> tuple[tuple[T, ...], ...]:
    """The pool shuffled once (by a seed drawn from the pool itself) and dealt into three shares;
    cached, since every generated example draws from several pools."""
    shuffled = list(pool)
    random.Random(f"pool:{len(pool)}:{pool[0]}").shuffle(shuffled)
    return tuple(tuple(shuffled[index::3]) for index in range(len(SPLITS)))


def sentiment(rng: random.Random, split: str) -> dict[str, Any]:
    label = rng.choice(("positive", "negative"))
    negated = rng.random() < 0.5
    positive_words = (label == "positive") != negated
    adjective = rng.choice(part(POSITIVE if positive_words else NEGATIVE, split))
    template = rng.choice(part(NEGATED if negated else AFFIRMED, split))
    return {"text": template.format(noun=rng.choice(part(SUBJECTS, split)), adj=adjective), "label": label}


def topic(rng: random.Random, split: str) -> dict[str, Any]:
    label = rng.choice(sorted(TOPICS))
    first, second = rng.sample(part(TOPICS[label], split), 2)
    return {"text": rng.choice(part(NEWS, split)).format(a=first, b=second), "label": label}


def arithmetic(rng: random.Random, split: str) -> dict[str, Any]:
    numbers = part(range(100), split)
    operation = rng.choice(("plus", "minus", "times"))
    a, b = rng.choice(numbers), rng.choice(numbers)
    if operation == "plus":
        templates, answer = SUMS, a + b
    elif operation == "minus":
        a, b = max(a, b), min(a, b)
        templates, answer = DIFFERENCES, a - b
    else:
        b = rng.choice([n for n in numbers if n < 10] or [2])
        templates, answer = PRODUCTS, a * b
    return {"question": rng.choice(part(templates, split)).format(a=a, b=b), "answer": str(answer)}


def extraction(rng: random.Random, split: str) -> dict[str, Any]:
    fields = {
        "name": rng.choice(part(NAMES, split)),
        "age": rng.choice(part(range(18, 81), split)),
        "city": rng.choice(part(CITIES, split)),
    }
    return {"text": rng.choice(part(PROFILES, split)).format(**fields), "fields": fields}


def ticket(rng: random.Random, split: str) -> dict[str, Any]:
    review = sentiment(rng, split)
    fields = {
        "num": rng.choice(part(range(1000, 10000), split)),
        "name": rng.choice(part(NAMES, split)),
        "city": rng.choice(part(CITIES, split)),
        "channel": rng.choice(part(CHANNELS, split)),
        "words": review["text"],
    }
    return {"text": rng.choice(part(TICKETS, split)).format(**fields), "label": review["label"]}


def order(rng: random.Random, split: str) -> dict[str, Any]:
    quantity, price = rng.choice(part(QUANTITIES, split)), rng.choice(part(PRICES, split))
    fields = {"name": rng.choice(part(NAMES, split)), "items": rng.choice(part(ITEMS, split))}
    text = rng.choice(part(ORDERS, split)).format(q=quantity, p=price, **fields)
    return {"text": text, "total": str(quantity * price)}


TASKS: dict[str, Callable[[random.Random, str], dict[str, Any]]] = {
    "sentiment": sentiment,
    "topic": topic,
    "arithmetic": arithmetic,
    "extraction": extraction,
    "ticket": ticket,
    "order": order,
}


def generate(task: str, split: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` examples of `task` for one split, the same for the same seed."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    rng = random.Random(f"{task}:{split}:{seed}")
    return [TASKS[task](rng, split) for _ in range(n)]


def write(task: str, out: str | Path, sizes: Sequence[int] = (50, 50, 100), seed: int = 0) -> dict[str, Path]:
    """Write TASK-train.jsonl, TASK-dev.jsonl and TASK-test.jsonl into `out`."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, size in zip(SPLITS, sizes, strict=True):
        path = folder / f"{task}-{split}.jsonl"
        rows = generate(task, split, size, seed)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        written[split] = path
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studio.evaluate.tasks", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=[*TASKS, "all"])
    parser.add_argument("--out", default=".", help="Folder for the JSONL files.")
    parser.add_argument("--sizes", default="50,50,100", help="train,dev,test sizes.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    for task in TASKS if args.task == "all" else [args.task]:
        for path in write(task, args.out, sizes, args.seed).values():
            print(path)


if __name__ == "__main__":
    main()
