"""The documents server's errors, each a subclass of the core error whose code the client sees."""

from __future__ import annotations

from deskmcp.core.errors import BadRequest, IOFailure, NotFound, ParseError


class DocumentNotFoundError(NotFound):
    """No such file under the roots, or no such document in the index."""


class DocumentFormatError(ParseError):
    """The file has a supported type but its content cannot be read as that type."""


class DocumentIndexError(IOFailure):
    """The file or the index could not be read or written (including size limits)."""


class DocumentSearchError(BadRequest):
    """The search arguments cannot be turned into a query."""


class UnsupportedFormatError(BadRequest):
    """The file's type is not one the server extracts text from."""
