"""Graph passes: rewrites of a traced graph that keep what it computes (the graph
optimizer, Grappler's job in TensorFlow). Not to be confused with `graphcore.optimizers`,
the training optimizers.

One module per pass, each `run(graph, state) -> number of rewrites`, rewriting only
through the Graph's public rewrite API; `manager.optimize` runs them in order to a fixed
point and reports, per pass, the ops removed / added / rewritten and the time taken.

    report = optimize(graph, fetches=[y, token])
    y, token = report.fetches          # a fetch may have been replaced by an equal tensor
    print(report.table())
"""
from .manager import DEFAULT_PASSES, OptimizeReport, PassStats, optimize, optimization_enabled

__all__ = ["DEFAULT_PASSES", "OptimizeReport", "PassStats", "optimize", "optimization_enabled"]
