"""`python -m draftfit` runs the command-line interface."""

from draftfit.cli.entry import main

raise SystemExit(main())
