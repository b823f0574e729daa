"""The bundle's entry point: every deskmcp server in one process over stdio (`deskmcp serve all`).

The host runs it with uv in the unpacked bundle (manifest.json's `mcp_config`); uv installs the
deskmcp wheel the bundle carries, as pyproject.toml beside this folder says. The settings come
from the environment the manifest fills from the person's answers (`user_config`).
"""

import sys

from deskmcp.launcher import main

if __name__ == "__main__":
    sys.argv = ["deskmcp", "serve", "all", *sys.argv[1:]]
    main()
