"""`python -m deskmcp`: the `deskmcp` command."""

from deskmcp.launcher import main

main()
