"""`python -m tools.draft PROBLEM.py [--device cuda] [--json]`: print the drafted candidate."""

from tools.draft.job import main

raise SystemExit(main())
