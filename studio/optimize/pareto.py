"""The score-versus-cost Pareto front of the candidates evaluated on the whole dev set, and its plot.

Cost is USD per example; where every candidate costs nothing (the embedded model), tokens
per example order them instead, so the front still tells cheap from expensive. The plot is
written as SVG by hand (no dependency), and also as PNG when matplotlib is installed.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.optimize.candidates import Candidate


@dataclass(frozen=True)
class Point:
    candidate: str
    score: float
    cost_per_example: float
    tokens_per_example: float
    calls_per_example: float

    @classmethod
    def of(cls, candidate: Candidate) -> Point:
        return cls(
            candidate.id,
            candidate.score,
            candidate.cost_per_example,
            candidate.tokens_per_example,
            candidate.calls_per_example,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 6),
            "cost_per_example": round(self.cost_per_example, 10),
            "candidate": self.candidate,
        }


def front(points: list[Point]) -> list[Point]:
    """Points no other point beats on score without costing more, cheapest first."""
    ordered = sorted(points, key=lambda p: (p.cost_per_example, p.tokens_per_example, -p.score))
    kept: list[Point] = []
    for point in ordered:
        if not kept or point.score > kept[-1].score:
            kept.append(point)
    return kept


def _axis(points: list[Point]) -> tuple[str, list[float]]:
    if any(p.cost_per_example > 0 for p in points):
        return "USD per example", [p.cost_per_example for p in points]
    return "tokens per example", [p.tokens_per_example for p in points]


def svg(points: list[Point], chosen: str, title: str) -> str:
    """A scatter of every point, the front as a line, the chosen candidate ringed."""
    width, height, left, right, top, bottom = 640, 400, 70, 20, 40, 50
    name, xs = _axis(points)
    x_low, x_high = min(xs, default=0.0), max(xs, default=1.0)
    x_span = (x_high - x_low) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(value: float) -> float:
        return left + (value - x_low) / x_span * plot_w * 0.9 + plot_w * 0.05

    def y(score: float) -> float:
        return top + (1 - score) * plot_h

    cost = dict(zip((p.candidate for p in points), xs, strict=True))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>',
        f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle">{html.escape(name)}</text>',
        f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" '
        'text-anchor="middle">dev score</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" stroke="#eee"/>')
    for value in (x_low, x_high):
        parts.append(f'<text x="{x(value):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{value:.4g}</text>')
    line = " ".join(f"{x(cost[p.candidate]):.1f},{y(p.score):.1f}" for p in front(points))
    parts.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for point in points:
        cx, cy = x(cost[point.candidate]), y(point.score)
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="#1f77b4" fill-opacity="0.6"/>')
        parts.append(f'<text x="{cx + 6:.1f}" y="{cy - 6:.1f}">{html.escape(point.candidate)}</text>')
        if point.candidate == chosen:
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="9" fill="none" stroke="#d62728" stroke-width="2"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_plots(points: list[Point], chosen: str, title: str, stem: str) -> list[Path]:
    """`STEM.svg`, and `STEM.png` when matplotlib is installed; the paths written."""
    written = [Path(f"{stem}.svg")]
    written[0].write_text(svg(points, chosen, title), encoding="utf-8")
    if importlib.util.find_spec("matplotlib") is not None:
        written.append(_png(points, chosen, title, Path(f"{stem}.png")))
    return written


def _png(points: list[Point], chosen: str, title: str, path: Path) -> Path:
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")

    name, xs = _axis(points)
    figure, axes = plt.subplots(figsize=(6.4, 4))
    axes.scatter(xs, [p.score for p in points], alpha=0.6)
    cost = dict(zip((p.candidate for p in points), xs, strict=True))
    edge = front(points)
    axes.plot([cost[p.candidate] for p in edge], [p.score for p in edge])
    for point in points:
        axes.annotate(point.candidate, (cost[point.candidate], point.score))
        if point.candidate == chosen:
            axes.scatter([cost[point.candidate]], [point.score], s=200, facecolors="none", edgecolors="red")
    axes.set_xlabel(name)
    axes.set_ylabel("dev score")
    axes.set_title(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
