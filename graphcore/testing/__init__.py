"""Models and helpers shared by the tests and the benchmarks (graphcore itself never
imports this package)."""
