"""`python -m draftfit` runs the command-line interface."""

from draftfit.cli.main import main

raise SystemExit(main())
