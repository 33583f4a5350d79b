"""What a run did, for tests and benchmarks: nodes run, frames made, iterations in flight,
kernels handed to the worker pool and the nodes the pool's threads ran."""
from __future__ import annotations


class RunStats:
    __slots__ = ("nodes", "frames", "async_ops", "pool_nodes", "messages", "max_iterations_in_flight")

    def __init__(self):
        self.nodes = 0
        self.frames = 0
        self.async_ops = 0      # kernels handed to the pool
        self.pool_nodes = 0     # nodes the pool's threads ran (those kernels and what they made ready)
        self.messages = 0       # values (and dead tokens) this device sent to others (_Send ops run)
        self.max_iterations_in_flight: dict[str, int] = {}

    def note_iterations(self, frame_name: str, in_flight: int) -> None:
        if in_flight > self.max_iterations_in_flight.get(frame_name, 0):
            self.max_iterations_in_flight[frame_name] = in_flight

    def __repr__(self) -> str:
        return (f"RunStats(nodes={self.nodes}, frames={self.frames}, async_ops={self.async_ops}, "
                f"pool_nodes={self.pool_nodes}, messages={self.messages}, "
                f"max_iterations_in_flight={self.max_iterations_in_flight})")
