"""The git:// transport replaces one private hook of dulwich: `TraditionalGitClient._connect`, and
reads the attributes `TCPGitClient.__init__` sets (`_host`, `_port`, `_remote_path_encoding`).
pyproject.toml pins dulwich below the next minor release; these tests fail on an upgrade that
moves or renames what the transport relies on, before a clone breaks."""

from __future__ import annotations

import inspect

from dulwich.client import TCPGitClient, TraditionalGitClient


def test_dulwich_still_has_the_private_connect_hook_the_git_protocol_transport_overrides() -> None:
    hook = TraditionalGitClient._connect  # pyright: ignore[reportPrivateUsage]
    assert list(inspect.signature(hook).parameters) == ["self", "cmd", "path", "protocol_version"]
    assert TCPGitClient._connect is not hook  # pyright: ignore[reportPrivateUsage]


def test_a_tcp_git_client_keeps_host_port_and_path_encoding_in_the_attributes_the_transport_reads() -> None:
    client = TCPGitClient("example.test", port=9419)
    assert client._host == "example.test"  # pyright: ignore[reportPrivateUsage]
    assert client._port == 9419  # pyright: ignore[reportPrivateUsage]
    assert isinstance(client._remote_path_encoding, str)  # pyright: ignore[reportPrivateUsage]
