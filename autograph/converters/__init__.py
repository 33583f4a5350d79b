"""One converter per construct; the order they run in is `transpiler.PASSES`."""
