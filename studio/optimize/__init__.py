"""The optimizer: search a flow's prompts, demos, form, strategy and models against a metric.

`prepare(options)` checks the input (no model call); `optimize(prepared, store)` searches
within the budget and writes the optimized flow and its report. See `optimization`.
"""

from __future__ import annotations

from studio.optimize.optimization import OptimizeOptions, OptimizeResult, Prepared, optimize, prepare

__all__ = ["OptimizeOptions", "OptimizeResult", "Prepared", "optimize", "prepare"]
