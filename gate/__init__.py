"""review-gate: a merge gate that never turns an error into a pass."""

__version__ = "0.1.0"
