"""The optimizer: search a flow's prompts, demos, form, strategy, models and nodes against a metric.

`prepare(options)` checks the input (no model call); `optimize(prepared, store)` searches
within the budget and writes the optimized flow and its report. See `options` and
`optimization`.
"""

from __future__ import annotations

from studio.optimize.optimization import OptimizeResult, optimize
from studio.optimize.options import OptimizeOptions, Prepared, prepare

__all__ = ["OptimizeOptions", "OptimizeResult", "Prepared", "optimize", "prepare"]
