"""`python -m elastream.cli`: the same as the `elastream` command."""

from elastream.cli import main

raise SystemExit(main())
