"""Sub-commands of ``review-gate``, one module each (discovered by :mod:`gate.cli`)."""
