"""What the diagrams tools return."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

SourceKind = Literal["local", "github", "git"]


class FileEntry(BaseModel):
    path: str = Field(description="Relative to the source, forward slashes")
    type: Literal["file", "dir"] = "file"
    size: int | None = Field(default=None, description="Bytes, when the source knows it cheaply")


class FileList(BaseModel):
    source: SourceKind
    location: str = Field(description="The folder, repository or URL read")
    ref: str | None = Field(default=None, description="Commit read (git and github)")
    root: str
    files: list[FileEntry]
    total: int = Field(description="Entries matching, over all pages")
    next_cursor: str | None = None


class FileContent(BaseModel):
    source: SourceKind
    path: str
    ref: str | None = None
    content: str
    truncated: bool = Field(description="More text follows; read on with start_line")
    binary: bool = Field(default=False, description="Not text: content is empty")
    encoding: str | None = Field(
        default=None, description="How the text was decoded: utf-8, utf-16-le, cp1252 (not UTF-8)..."
    )
    replaced: int = Field(default=0, description="U+FFFD in content standing for undecodable or NUL bytes")
    size: int | None = Field(default=None, description="File size in bytes")
    start_line: int
    end_line: int | None = Field(default=None, description="Last line returned")


class RenderResult(BaseModel):
    path: str = Field(description="Saved image, relative to the project root")
    format: Literal["png", "svg"]
    bytes: int
    width: int | None = None
    height: int | None = None
    renderer: str
    diagram_type: str | None = None
    scaled: bool = Field(default=False, description="PNG scaled down to the pixel cap")


class MermaidCheck(BaseModel):
    valid: bool
    diagram_type: str | None = None
    message: str | None = None
    line: int | None = None
