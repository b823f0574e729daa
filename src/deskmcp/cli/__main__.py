"""`python -m deskmcp.cli`: the `deskmcp` command."""

from deskmcp.cli import app

app()
