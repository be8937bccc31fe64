"""``python -m gate`` runs the command-line interface."""

from gate.cli import entry

raise SystemExit(entry())
