"""The shared core: errors, configuration, safe paths, files, the search index and the
policies of networked clients (clock, ttlcache, throttle, retry, http).

Nothing here imports a server package.
"""
