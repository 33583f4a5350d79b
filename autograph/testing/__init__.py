"""Differential testing of the converter: random Python programs, run both as plain Python
and through `@autograph.function`, compared value by value and line by line.

    random_programs  seeded generator of small, always-terminating programs
    differential     run one program both ways and classify any disagreement
    shrinker         make a failing program smaller while it fails the same way
    program_facts    constructs a program uses; reads that may find a variable undefined
    time_limit       a time limit for one checked call
    random_grad_programs  random differentiable programs, gradients against finite differences
"""
