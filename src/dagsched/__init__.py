"""dagsched: schedule DAG-shaped workflows onto heterogeneous cloud nodes."""

__version__ = "0.1.0"
