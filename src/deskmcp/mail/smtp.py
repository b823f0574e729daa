"""Delivery through an SMTP server (stdlib `smtplib`), TLS verified, errors mapped to the taxonomy.

A failure before the message data is handed over is definite (nothing was sent); a dropped
connection or timeout after it is ambiguous (`DeliveryUnknown`): the caller must not resend blindly.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage

from deskmcp.core.errors import AuthRequired, SendFailed
from deskmcp.mail.backends.base import DeliveryUnknown

LOGIN_SETTINGS = (
    "MAIL_SMTP_USER and MAIL_SMTP_PASSWORD, or for an account of MAIL_ACCOUNTS with a smtp_host of its own"
    " its smtp_user and smtp_password_env (a password is sent only to the host it was configured for)"
)
"""Where an SMTP login comes from, as the errors that ask for one name it."""
_AUTH_NEEDED = 530


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int | None = None
    user: str | None = None
    password: str | None = None
    security: str = "starttls"
    timeout: float = 30.0

    @property
    def effective_port(self) -> int:
        if self.port:
            return self.port
        return {"ssl": 465, "starttls": 587}.get(self.security, 25)


def deliver(config: SmtpConfig, message: EmailMessage, *, sender: str, recipients: list[str]) -> None:
    """Hand `message` to the SMTP server for exactly `recipients` (the Bcc header is not sent).

    The envelope is given, never derived by smtplib from the headers: it would follow a Resent-To
    or a From the checks never saw."""
    if not recipients:
        raise SendFailed("The message has no recipient; nothing was sent.", {"recipients": 0})
    context = ssl.create_default_context()
    where = f"{config.host}:{config.effective_port}"
    try:
        if config.security == "ssl":
            client: smtplib.SMTP = smtplib.SMTP_SSL(
                config.host, config.effective_port, timeout=config.timeout, context=context
            )
        else:
            client = smtplib.SMTP(config.host, config.effective_port, timeout=config.timeout)
        with client:
            client.ehlo()
            if config.security == "starttls":
                client.starttls(context=context)
                client.ehlo()
            if config.user:
                client.login(config.user, config.password or "")
            _send(client, message, where, sender, recipients)
    except smtplib.SMTPAuthenticationError as exc:
        raise AuthRequired(
            f"The SMTP server {where} refused the login; check {LOGIN_SETTINGS} (many providers need an app password).",
            {"server": where, "code": exc.smtp_code},
        ) from exc
    except smtplib.SMTPSenderRefused as exc:
        if exc.smtp_code != _AUTH_NEEDED or config.user:
            raise _refused(exc, where) from exc
        raise AuthRequired(
            f"The SMTP server {where} requires a login and none is configured for it: set {LOGIN_SETTINGS}."
            " Nothing was sent.",
            {"server": where, "code": exc.smtp_code},
        ) from exc
    except (smtplib.SMTPException, ssl.SSLError, OSError) as exc:
        if isinstance(exc, DeliveryUnknown | SendFailed):
            raise
        raise SendFailed(
            f"The SMTP server {where} could not be reached or refused the session: {_reason(exc)}. Nothing was sent.",
            {"server": where, "reason": _reason(exc)},
        ) from exc


def _send(client: smtplib.SMTP, message: EmailMessage, where: str, sender: str, recipients: list[str]) -> None:
    try:
        refused = client.send_message(message, from_addr=sender, to_addrs=recipients)
    except smtplib.SMTPRecipientsRefused as exc:
        raise SendFailed(
            f"The SMTP server refused every recipient: {_reason(exc)}.",
            {"server": where, "refused": sorted(exc.recipients)},
        ) from exc
    except smtplib.SMTPSenderRefused:
        raise  # `deliver` tells a login the server asks for from another refusal
    except smtplib.SMTPResponseException as exc:
        raise _refused(exc, where) from exc
    except (smtplib.SMTPServerDisconnected, TimeoutError, ConnectionError, OSError) as exc:
        raise DeliveryUnknown(
            f"The connection to {where} failed while the message was being sent; it may or may not have been"
            " delivered. Retry with the same idempotency_key: it is never sent twice.",
            {"server": where, "reason": _reason(exc)},
        ) from exc
    if refused:
        raise SendFailed(
            f"The SMTP server refused some recipients: {', '.join(sorted(refused))}; the others received it.",
            {"server": where, "refused": sorted(refused), "partial": True},
        )


def _refused(exc: smtplib.SMTPResponseException, where: str) -> SendFailed:
    return SendFailed(
        f"The SMTP server {where} refused the message: {exc.smtp_code} {_reason(exc)}.",
        {"server": where, "code": exc.smtp_code},
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        err = exc.smtp_error
        return err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)
    return str(exc) or type(exc).__name__
