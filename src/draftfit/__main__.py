"""`python -m draftfit` runs the command-line interface."""

from draftfit.cli import main

raise SystemExit(main())
