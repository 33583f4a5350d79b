"""Running a partitioned graph (graphcore/partition.py): one executor per device, joined
by a rendezvous of keyed messages. `local` runs the devices on threads of this process,
`ray_engine` each device in a Ray actor (optional: pip install -e '.[distributed]')."""
from .local import LocalEngine
from .rendezvous import Rendezvous

__all__ = ["LocalEngine", "Rendezvous"]
