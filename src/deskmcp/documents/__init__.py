"""The documents server: index, search and annotate a folder of documents."""
