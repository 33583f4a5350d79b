"""Runtime operators called by converted code: each picks plain Python semantics for
Python values and graph semantics (graphcore builders) for tensors."""
