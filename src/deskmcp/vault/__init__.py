"""The vault server: an Obsidian-style folder of Markdown notes, indexed and safely editable."""
