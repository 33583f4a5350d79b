"""The `autograph` command: convert, graph, run, trace, grad and demo (see cli/main.py)."""
