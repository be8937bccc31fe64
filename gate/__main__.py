"""``python -m gate`` runs the command-line interface."""

from gate.cli import main

raise SystemExit(main())
