"""Running flows: compiler, engine (sub-flows included), model binding, budget, node registry."""
