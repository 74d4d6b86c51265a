"""Where a round's moves come from: each source is one module behind `base.MoveSource`.

- `demos`: bootstrapped, labelled, joint and searched demos (it runs the bootstrap first);
- `instructions`: the instruction library and the proposer model's rewrites;
- `models`: how a node calls its model (form, strategy, cascade, model alias, temperature);
- `topology`: nodes added to or removed from the graph.

The search asks each source for its offer every round and interleaves the offers by kind
(`moves.interleave`), so no kind of move crowds out the others.
"""
