"""Which git remotes may be cloned, under what name they are cached, and the guarded transport.

A clone URL comes from the model, so it is treated as untrusted: only the schemes the settings
allow (`https` by default; `file` only when listed), only the hosts they allow, and never an
address on loopback, a private or a link-local network unless that host or network is listed
explicitly, and never at all with `git_public_only` (a user of a shared server). A host is
resolved once and a connection goes to exactly an address checked: for git:// the clone URL's,
for HTTP each connection's (redirects included, whose host must be allowed too), so a name that
resolves elsewhere the second time gains nothing. An IPv6 address
that carries an IPv4 one (NAT64, 6to4, Teredo, mapped, compatible) is judged by the IPv4 address.
ssh:// is never cloned: the ssh program resolves and connects by itself.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any
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


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
"""Local-use NAT64 (RFC 8215): never public, whatever IPv4 address it carries."""
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
    (::a.b.c.d), NAT64 (64:ff9b::/96, 64:ff9b:1::/48 in its /96 form), 6to4 (2002::/16), Teredo
    (2001::/32, server and client); none for other addresses."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if address in _NAT64 or address in _NAT64_LOCAL or address in _COMPATIBLE:
        return [low32]
    return []


def is_public(address: IPAddress) -> bool:
    """A global unicast address, and so is every IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # the connection goes to the IPv4 address itself
    if not address.is_global or address.is_multicast or address in _NAT64_LOCAL:
        return False
    return all(v4.is_global and not v4.is_multicast for v4 in embedded_ipv4(address))


_NOT_PUBLIC_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.168.0.0/16", "::/128", "::1/128", "::ffff:0:0/96", "fc00::/7", "fe80::/10",
    )
)  # fmt: skip
"""Unspecified, private, shared (carrier-grade NAT), loopback and link-local networks."""


def non_public_entries(hosts: str) -> list[str]:
    """The entries of a DIAGRAMS_GIT_ALLOWED_HOSTS value that are addresses or networks reaching
    beyond public addresses (`localhost` too; other names are judged by what they resolve to)."""
    refused: list[str] = []
    for entry in (e.strip() for e in hosts.split(",")):
        if not entry:
            continue
        if entry.lower().rstrip(".") == "localhost" or entry.lower().endswith(".localhost"):
            refused.append(entry)
            continue
        try:
            network = ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            continue
        ends = (network.network_address, network.broadcast_address)
        if not all(is_public(end) for end in ends) or any(
            network.overlaps(special) for special in _NOT_PUBLIC_NETWORKS if special.version == network.version
        ):
            refused.append(entry)
    return refused


def shown_address(address: IPAddress) -> str:
    """`64:ff9b::7f00:1 (127.0.0.1)`: the address, with the IPv4 address it carries."""
    carried = embedded_ipv4(address)
    return f"{address} ({', '.join(map(str, carried))})" if carried else str(address)


class RemotePolicy:
    """`DIAGRAMS_GIT_ALLOWED_SCHEMES` and `DIAGRAMS_GIT_ALLOWED_HOSTS`, applied to one URL or one connection."""

    def __init__(
        self, schemes: str, hosts: str, resolve: Callable[..., Any] | None = None, *, public_only: bool = False
    ) -> None:
        self.public_only = public_only
        """Only public addresses, whatever is listed (a user of a shared server)."""
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
        """Name resolution (`socket.getaddrinfo` when None, looked up at each call)."""

    @classmethod
    def from_settings(cls, settings: DiagramsSettings) -> RemotePolicy:
        return cls(settings.git_allowed_schemes, settings.git_allowed_hosts, public_only=settings.git_public_only)

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

    def check_address(self, host: str, address: str, shown: str) -> IPAddress:
        """Refuse a connection to `address` (what `host` resolved to) unless it is public or listed."""
        ip = self._literal(address)
        if ip is None:
            raise PermissionDenied(f"{shown} resolved to {address!r}, which is not an IP address.", {"repo": shown})
        listed = any(ip in net for net in self.networks) or host in self.names
        if listed and not self.public_only:
            return ip  # listed explicitly (by address, network or exact name)
        if not is_public(ip) and self.public_only:
            raise PermissionDenied(
                f"{shown} resolves to {shown_address(ip)}, a loopback, private or link-local address; on a shared "
                "server only public hosts are cloned from.",
                {"repo": shown, "address": str(ip)},
            )
        if not is_public(ip):
            raise PermissionDenied(
                f"{shown} resolves to {shown_address(ip)}, a loopback, private or link-local address; it is not "
                "cloned. To allow it, add that host or network to DIAGRAMS_GIT_ALLOWED_HOSTS.",
                {"repo": shown, "address": str(ip)},
            )
        return ip

    def check_host(self, scheme: str, host: str, shown: str) -> None:
        """Refuse a scheme or a host name the settings do not allow (a clone URL, or where it redirects)."""
        if scheme not in self.schemes:
            allowed = ", ".join(sorted(self.schemes)) or "none"
            raise PermissionDenied(
                f"Cloning over {scheme}:// is not allowed (allowed: {allowed}). Use an https:// URL, "
                "or add the scheme to DIAGRAMS_GIT_ALLOWED_SCHEMES.",
                {"repo": shown, "scheme": scheme},
            )
        if scheme != "file" and self.restricted and not self.host_listed(host):
            raise PermissionDenied(
                f"The host {host} is not in DIAGRAMS_GIT_ALLOWED_HOSTS; {shown} is not cloned from it.",
                {"repo": shown, "host": host},
            )

    def check(self, remote: RemoteURL, shown: str) -> list[tuple[int, IPAddress]]:
        """Refuse a scheme or host the settings do not allow, and hosts resolving to non-public
        addresses. Returns the addresses checked (family, address): the only ones to connect to."""
        if remote.scheme == "ssh":
            raise PermissionDenied(
                "ssh:// and user@host:path URLs are never cloned, even when DIAGRAMS_GIT_ALLOWED_SCHEMES lists ssh: "
                "the ssh program resolves the host and follows its own configuration (proxies, jump hosts, shared "
                "connections) by itself, so the address it reaches cannot be checked, nor a silent server cut "
                "off. Use the repository's https:// URL.",
                {"repo": shown, "scheme": remote.scheme},
            )
        self.check_host(remote.scheme, remote.host, shown)
        if remote.scheme == "file":
            return []
        return self.addresses(remote.host, remote.port or DEFAULT_PORTS.get(remote.scheme, 0), shown)

    def addresses(self, host: str, port: int, shown: str) -> list[tuple[int, IPAddress]]:
        """Resolve `host` once and check every address: those are the ones to connect to."""
        resolve = self.resolve or socket.getaddrinfo
        try:
            infos = resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise NotFound(
                f"The host {host} of {shown} could not be resolved; check the URL.", {"repo": shown}
            ) from exc
        checked = [(info[0], self.check_address(host, str(info[4][0]), shown)) for info in infos]
        if not checked:
            raise NotFound(f"The host {host} of {shown} resolves to no address; check the URL.", {"repo": shown})
        return list(dict.fromkeys(checked))


class TransferDeadline:
    """The whole of one clone or fetch must end within `seconds`: when they have passed, every
    connection it opened is shut down, so a remote that keeps sending a byte now and then (never
    idle long enough for the read timeout) is cut off too."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._ends = time.monotonic() + seconds

    def __enter__(self) -> TransferDeadline:
        self._ends = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        # The transfer is over, however it ended: no connection it opened outlives it (one a
        # failed read left behind, or a pool kept for reuse, would stay open to a silent remote).
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _cut(sock)

    def remaining(self) -> float:
        return max(0.0, self._ends - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if not self.expired:
                self._sockets.append(sock)
                return
        _cut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _cut(sock)


def _cut(sock: socket.socket) -> None:
    # shutdown (not close) wakes a thread blocked reading the socket; its owner still closes it
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def open_checked(
    addresses: list[tuple[int, IPAddress]], port: int, timeout: float, deadline: TransferDeadline
) -> socket.socket:
    """A TCP connection to the first of `addresses` (already checked) that answers; connecting and
    each read give up after `timeout` seconds, everything at the deadline."""
    failure: OSError = OSError(f"no address to connect to on port {port}")
    for family, address in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(min(timeout, deadline.remaining()) or 0.001)
            deadline.watch(sock)
            sock.connect((str(address), port))
            sock.settimeout(timeout)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure


def git_protocol_client(
    remote: RemoteURL, addresses: list[tuple[int, IPAddress]], timeout: float, deadline: TransferDeadline
) -> Any:
    """A dulwich git:// client that connects to `addresses` (checked, never looked up again), with
    `timeout` on connecting and on every read, and cut off at `deadline`."""
    from dulwich.client import TCPGitClient
    from dulwich.protocol import DEFAULT_GIT_PROTOCOL_VERSION_FETCH, Protocol

    class CheckedTCPGitClient(TCPGitClient):
        # `_connect` is the hook dulwich's transports implement (TraditionalGitClient); this one
        # replaces the lookup and the untimed socket of TCPGitClient's own
        def _connect(
            self, cmd: bytes, path: str | bytes, protocol_version: int | None = None
        ) -> tuple[Protocol, Callable[[], bool], IO[bytes] | None]:
            if isinstance(path, str):
                path = path.encode(self._remote_path_encoding)
            if cmd != b"upload-pack":
                raise PermissionDenied("Only fetching is allowed over git://.", {"command": cmd.decode()})
            sock = open_checked(addresses, self._port, timeout, deadline)
            rfile = sock.makefile("rb", -1)
            wfile = sock.makefile("wb", 0)

            def close() -> None:
                rfile.close()
                wfile.close()
                sock.close()

            def shutdown_write() -> None:
                wfile.flush()
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)

            proto = Protocol(rfile.read, wfile.write, close, shutdown_write=shutdown_write)
            self.protocol_version = protocol_version or DEFAULT_GIT_PROTOCOL_VERSION_FETCH
            # the request line of git's TCP transport: the service, the path, the host it was asked of,
            # then (protocol v2) the version behind two NULs, which old servers ignore
            extra = b"\0\0version=%d\0" % self.protocol_version if self.protocol_version == 2 else b""
            proto.send_cmd(
                b"git-" + cmd,
                path.removeprefix(b"/") if path.startswith(b"/~") else path,
                b"host=" + self._host.encode("idna") + extra,
            )

            def can_read() -> bool:
                return bool(select.select([sock], [], [], 0)[0])

            return proto, can_read, None

    return CheckedTCPGitClient(remote.host, port=remote.port)


def guarded_pool_manager(
    policy: RemotePolicy,
    shown: str,
    timeout: float,
    deadline: TransferDeadline,
    checked: dict[tuple[str, int], list[tuple[int, IPAddress]]] | None = None,
) -> Any:
    """A urllib3 pool manager whose every connection (redirects too) goes to an allowed scheme and
    host, resolved once and connected to an address checked against `policy`; connects and reads
    give up after `timeout` seconds, and `deadline` cuts every connection off. `checked` holds the
    addresses already checked per (host, port), the clone URL's: each host is looked up once per transfer."""
    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
    from urllib3.util.connection import create_connection

    resolved = dict(checked or {})

    def connect(conn: HTTPConnection, scheme: str) -> socket.socket:
        # in place of urllib3's own lookup: TLS and the Host header still use the name, the TCP
        # connection goes to an address just checked, never to a second lookup's answer
        host = conn.host.lower().rstrip(".").strip("[]")
        policy.check_host(scheme, host, shown)
        failure: OSError | None = None
        port = conn.port or 0
        if (host, port) not in resolved:
            resolved[host, port] = policy.addresses(host, port, shown)
        for _family, address in resolved[host, port]:
            try:
                sock = create_connection(
                    (str(address), port),
                    conn.timeout,
                    source_address=conn.source_address,
                    socket_options=conn.socket_options,
                )
            except TimeoutError as exc:
                raise ConnectTimeoutError(conn, f"Connection to {host} timed out.") from exc
            except OSError as exc:
                failure = exc
                continue
            deadline.watch(sock)
            return sock
        raise NewConnectionError(conn, f"Failed to establish a new connection: {failure}")

    class CheckedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return connect(self, "http")

    class CheckedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return connect(self, "https")

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
