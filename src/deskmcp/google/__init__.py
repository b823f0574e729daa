"""The one Google layer of deskmcp, shared by the Gmail and Google Sheets backends.

- `auth`: credentials (desktop flow, token store with silent refresh, service accounts, ADC)
  and API clients built from the discovery documents the library ships;
- `web`: the `/auth/url` and `/callback` routes of the HTTP app;
- `errors`: Google's error answers mapped onto the taxonomy of `deskmcp.core.errors`.

Only this package and the two backends import the Google client libraries, always lazily.
"""
