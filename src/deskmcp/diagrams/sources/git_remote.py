"""Which git remotes may be cloned, under what name they are cached, and the guarded transport.

A clone URL comes from the model, so it is treated as untrusted: only the schemes the settings
allow (`https` by default; `file` only when listed), only the hosts they allow, and never an
address on loopback, a private or a link-local network unless that host or network is listed
explicitly. Addresses are checked once resolved, before the clone, and again on every HTTP
connection (redirects included), so a name that resolves elsewhere the second time gains nothing.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from deskmcp.core.errors import BadRequest, NotFound, PermissionDenied

if TYPE_CHECKING:
    from deskmcp.diagrams.settings import DiagramsSettings

SCHEMES = ("https", "http", "git", "ssh", "file")
DEFAULT_PORTS = {"https": 443, "http": 80, "git": 9418, "ssh": 22}
_SCP_LIKE = re.compile(r"^(?P<user>[\w.-]+)@(?P<host>[\w.-]+):(?P<path>(?!//).*)$")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class RemoteURL:
    url: str
    """The URL to clone, as given (scp-like `user@host:path` becomes `ssh://user@host/path`)."""
    scheme: str
    host: str
    port: int | None
    key: str
    """The cache key: scheme and host lowercased, default port, credentials, trailing `/` and `.git` dropped."""


def parse_remote(url: str) -> RemoteURL:
    text = url.strip()
    scp = _SCP_LIKE.match(text)
    if scp and "://" not in text:
        text = f"ssh://{scp['user']}@{scp['host']}/{scp['path'].lstrip('/')}"
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError as exc:
        raise BadRequest(f"The port of the clone URL is not a number: {exc}.", {"scheme": scheme}) from exc
    host = (parts.hostname or "").lower().rstrip(".")
    if scheme != "file" and not host:
        raise BadRequest("The clone URL names no host, e.g. 'https://github.com/owner/name.git'.", {"scheme": scheme})
    path = parts.path.rstrip("/").removesuffix(".git").rstrip("/")
    shown_port = "" if port is None or port == DEFAULT_PORTS.get(scheme) else f":{port}"
    netloc = host if ":" not in host else f"[{host}]"
    key = f"{scheme}://{netloc}{shown_port}{path}" + (f"?{parts.query}" if parts.query else "")
    return RemoteURL(text, scheme, host, port, key)


def _is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


class RemotePolicy:
    """`DIAGRAMS_GIT_ALLOWED_SCHEMES` and `DIAGRAMS_GIT_ALLOWED_HOSTS`, applied to one URL or one connection."""

    def __init__(self, schemes: str, hosts: str, resolve: Callable[..., Any] = socket.getaddrinfo) -> None:
        self.schemes = frozenset(s.strip().lower().removesuffix("://") for s in schemes.split(",") if s.strip())
        unknown = sorted(self.schemes - set(SCHEMES))
        if unknown:
            raise BadRequest(f"DIAGRAMS_GIT_ALLOWED_SCHEMES names unknown schemes {unknown}; known: {list(SCHEMES)}.")
        self.names: set[str] = set()
        self.suffixes: list[str] = []
        self.networks: list[IPNetwork] = []
        for entry in (e.strip().lower() for e in hosts.split(",")):
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                if entry.startswith("*."):
                    self.suffixes.append(entry[1:])
                else:
                    self.names.add(entry.rstrip("."))
        self.resolve = resolve

    @classmethod
    def from_settings(cls, settings: DiagramsSettings) -> RemotePolicy:
        return cls(settings.git_allowed_schemes, settings.git_allowed_hosts)

    @property
    def restricted(self) -> bool:
        return bool(self.names or self.suffixes or self.networks)

    def _literal(self, host: str) -> IPAddress | None:
        try:
            return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        except ValueError:
            return None

    def host_listed(self, host: str) -> bool:
        literal = self._literal(host)
        if literal is not None:
            return any(literal in net for net in self.networks)
        return host in self.names or any(host.endswith(suffix) for suffix in self.suffixes)

    def check_address(self, host: str, address: str, shown: str) -> None:
        """Refuse a connection to `address` (what `host` resolved to) unless it is public or listed."""
        ip = self._literal(address)
        if ip is None:
            raise PermissionDenied(f"{shown} resolved to {address!r}, which is not an IP address.", {"repo": shown})
        if any(ip in net for net in self.networks) or host in self.names:
            return  # listed explicitly (by address, network or exact name)
        if not _is_public(ip):
            raise PermissionDenied(
                f"{shown} resolves to {ip}, a loopback, private or link-local address; it is not cloned. "
                "To allow it, add that host or network to DIAGRAMS_GIT_ALLOWED_HOSTS.",
                {"repo": shown, "address": str(ip)},
            )

    def check(self, remote: RemoteURL, shown: str) -> None:
        """Refuse a scheme or host the settings do not allow, and hosts resolving to non-public addresses."""
        if remote.scheme not in self.schemes:
            allowed = ", ".join(sorted(self.schemes)) or "none"
            raise PermissionDenied(
                f"Cloning over {remote.scheme}:// is not allowed (allowed: {allowed}). Use an https:// URL, "
                "or add the scheme to DIAGRAMS_GIT_ALLOWED_SCHEMES.",
                {"repo": shown, "scheme": remote.scheme},
            )
        if remote.scheme == "file":
            return
        if self.restricted and not self.host_listed(remote.host):
            raise PermissionDenied(
                f"The host {remote.host} is not in DIAGRAMS_GIT_ALLOWED_HOSTS; it is not cloned.",
                {"repo": shown, "host": remote.host},
            )
        port = remote.port or DEFAULT_PORTS.get(remote.scheme, 0)
        try:
            infos = self.resolve(remote.host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise NotFound(f"The host of {shown} could not be resolved; check the URL.", {"repo": shown}) from exc
        for info in infos:
            self.check_address(remote.host, str(info[4][0]), shown)


def guarded_pool_manager(policy: RemotePolicy, shown: str, timeout: float) -> Any:
    """A urllib3 pool manager whose every connection (redirects too) is checked against `policy`
    once connected, and whose connects and reads give up after `timeout` seconds."""
    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    def checked(sock: socket.socket, host: str) -> socket.socket:
        try:
            policy.check_address(host.lower().rstrip("."), str(sock.getpeername()[0]), shown)
        except PermissionDenied:
            sock.close()
            raise
        return sock

    class CheckedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return checked(super()._new_conn(), self.host)

    class CheckedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return checked(super()._new_conn(), self.host)

    class CheckedHTTPPool(HTTPConnectionPool):
        ConnectionCls = CheckedHTTPConnection  # type: ignore[assignment]  # urllib3 types it as a Protocol

    class CheckedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = CheckedHTTPSConnection  # type: ignore[assignment]

    manager = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=timeout, read=timeout),
        retries=urllib3.Retry(total=2, connect=1, read=0, redirect=5, raise_on_redirect=True),
        headers={"User-Agent": "deskmcp-diagrams"},
    )
    manager.pool_classes_by_scheme = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}
    return manager
