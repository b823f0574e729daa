"""The shared core: errors, configuration, safe paths, files, policies and the search index.

Nothing here imports a server package.
"""
