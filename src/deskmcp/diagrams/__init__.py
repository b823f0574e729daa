"""The diagrams server: project files from local folders, git and GitHub; Mermaid rendered offline."""
