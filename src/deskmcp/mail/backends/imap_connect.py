"""Connecting to an IMAP server: TLS verified, STARTTLS where asked, and every failure (closed
connection, BYE greeting, refused STARTTLS or login, timeout) a taxonomy error carrying the
server's own words."""

from __future__ import annotations

import contextlib
import imaplib
import ssl
from dataclasses import dataclass
from typing import Any

from deskmcp.core.errors import AuthRequired, ExternalServiceError, Timeout


@dataclass(frozen=True)
class ImapConfig:
    host: str
    port: int | None = None
    user: str | None = None
    password: str | None = None
    security: str = "ssl"
    timeout: float = 30.0
    sent_copy: bool = True

    @property
    def effective_port(self) -> int:
        return self.port or (993 if self.security == "ssl" else 143)


def words(exc: BaseException) -> str:
    """The server's own words in an imaplib error (bytes reprs unwrapped)."""
    text = str(exc)
    if text.startswith(("b'", 'b"')) and text.endswith(("'", '"')):
        text = text[2:-1]
    return text.strip() or type(exc).__name__


def connect(config: ImapConfig, address: str) -> Any:
    """A logged-in client; every way the server can fail is a taxonomy error with its words."""
    from imapclient import IMAPClient
    from imapclient.exceptions import LoginError

    c = config
    where = f"{c.host}:{c.effective_port}"
    context = ssl.create_default_context()
    client: Any = None
    try:
        client = IMAPClient(
            c.host, port=c.effective_port, ssl=c.security == "ssl", ssl_context=context, timeout=c.timeout
        )
        if c.security == "starttls":
            if not client.has_capability("STARTTLS"):
                raise ExternalServiceError(
                    f"The IMAP server {where} does not offer STARTTLS; set MAIL_IMAP_SECURITY=ssl (port 993)"
                    " if it speaks TLS from the start.",
                    {"server": where},
                )
            try:
                client.starttls(context)
            except imaplib.IMAP4.error as exc:  # imaplib keeps only its own words here
                raise ExternalServiceError(
                    f"The IMAP server {where} refused STARTTLS ({words(exc)}); set MAIL_IMAP_SECURITY=ssl"
                    " (port 993) if it speaks TLS from the start, or retry later.",
                    {"server": where},
                ) from exc
        client.login(c.user or address, c.password or "")
    except LoginError as exc:
        raise AuthRequired(
            f"The IMAP server {where} refused the login ({words(exc)}); check MAIL_IMAP_USER and"
            " MAIL_IMAP_PASSWORD, or for an account of MAIL_ACCOUNTS with an imap_host of its own its imap_user"
            " and imap_password_env (a password is sent only to the host it was configured for; most providers"
            " need an app password).",
            {"server": where},
        ) from exc
    except TimeoutError as exc:
        raise Timeout(f"The IMAP server {where} did not answer in {c.timeout:g} s.", {"server": where}) from exc
    except (imaplib.IMAP4.error, OSError, ssl.SSLError) as exc:
        # A closed connection, a BYE greeting or a refused STARTTLS: the server's words, and
        # what to check.
        if client is not None:
            with contextlib.suppress(OSError, imaplib.IMAP4.error):
                client.shutdown()
        raise ExternalServiceError(
            f"The IMAP server {where} could not be used: {words(exc)}. Check MAIL_IMAP_HOST, MAIL_IMAP_PORT"
            " and MAIL_IMAP_SECURITY (ssl on 993, starttls on 143), then retry.",
            {"server": where},
        ) from exc
    client.normalise_times = False
    return client
