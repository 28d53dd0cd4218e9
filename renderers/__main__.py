"""`python -m renderers gif|play ...` (see `renderers.cli`)."""

from renderers.cli import main

raise SystemExit(main())
