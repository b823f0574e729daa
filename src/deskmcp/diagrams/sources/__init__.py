"""Sources of project files: the contract, the factory and the backends (local, git, github)."""
