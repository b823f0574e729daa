"""Google credentials for every server that talks to a Google API (mail, sheets).

Three ways to authorise, tried in this order: a service account (optionally acting for a
Workspace user through domain-wide delegation), Application Default Credentials, or the
user's own OAuth token kept in a `TokenStore` (a 0600 file by default) and refreshed
silently, the refreshed token written back. A missing, revoked or expired grant becomes
`AuthRequired` naming the command that fixes it: `deskmcp auth google`.

google-auth, google-auth-oauthlib and google-api-python-client (the `google` extra) are imported
inside the functions that need them, so importing this module costs nothing, and without the
extra those functions raise `MissingExtra` naming the command that adds it. The sign-in routes of the
HTTP app are in `deskmcp.google.web`, the mapping of Google's errors in `deskmcp.google.errors`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias
from deskmcp.core.errors import AuthRequired, BadRequest, ExternalServiceError, IOFailure, ParseError
from deskmcp.core.extras import needs_extra
from deskmcp.core.files import PRIVATE_FILE, PRIVATE_FOLDER, atomic_write_text
from deskmcp.core.shared_settings import DatabaseSettings

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

log = logging.getLogger("deskmcp.google")

AUTH_COMMAND = "deskmcp auth google"
AUTH_URI = "https://accounts.google.com/o/oauth2/auth"
TOKEN_URI = "https://oauth2.googleapis.com/token"
GOOGLE_FEATURE = "Google (Gmail, Google Sheets, `deskmcp auth google`)"

# The narrowest scopes each server needs. gmail.modify reads, labels and drafts (not
# permanent deletion); gmail.send sends. drive.file limits Drive to files deskmcp created or
# the user opened with it; drive.metadata.readonly lets list_spreadsheets see the others.
SCOPES: dict[str, tuple[str, ...]] = {
    "mail": (
        "https://www.googleapis.com/auth/gmail.modify",
        "https://www.googleapis.com/auth/gmail.send",
    ),
    "sheets": (
        "https://www.googleapis.com/auth/spreadsheets",
        "https://www.googleapis.com/auth/drive.file",
        "https://www.googleapis.com/auth/drive.metadata.readonly",
    ),
}


class GoogleSettings(WorkspaceSettings, DatabaseSettings):
    """Environment: `GOOGLE_CLIENT_SECRETS`, `GOOGLE_CLIENT_ID`, `GOOGLE_CLIENT_SECRET`, `GOOGLE_TOKEN_FILE`,
    `GOOGLE_SERVICE_ACCOUNT_FILE`, `GOOGLE_DELEGATED_USER`, `GOOGLE_USE_ADC`, `DESKMCP_TOKEN_KEYS`;
    `DESKMCP_DATABASE_URL` (`DatabaseSettings`: each user's token is kept there when deskmcp serves
    several users); plus the workspace's."""

    google_client_secrets: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("google_client_secrets", "GOOGLE_CLIENT_SECRETS"),
        description="The OAuth client JSON downloaded from the Google Cloud console (Desktop or Web app).",
    )
    google_client_id: str | None = Field(
        default=None,
        validation_alias=env_alias("google_client_id", "GOOGLE_CLIENT_ID"),
        description="OAuth client id, instead of a client secrets file.",
    )
    google_client_secret: str | None = Field(
        default=None,
        validation_alias=env_alias("google_client_secret", "GOOGLE_CLIENT_SECRET"),
        description="OAuth client secret, with GOOGLE_CLIENT_ID.",
    )
    google_token_file: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("google_token_file", "GOOGLE_TOKEN_FILE"),
        description="Where the user's token is kept (default: <workspace>/.deskmcp/google-token.json, mode 0600).",
    )
    google_service_account_file: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("google_service_account_file", "GOOGLE_SERVICE_ACCOUNT_FILE"),
        description="A service account key file; used instead of the user's token when set.",
    )
    google_delegated_user: str | None = Field(
        default=None,
        validation_alias=env_alias("google_delegated_user", "GOOGLE_DELEGATED_USER"),
        description="With a service account: the Workspace user to act for (domain-wide delegation).",
    )
    google_use_adc: bool = Field(
        default=False,
        validation_alias=env_alias("google_use_adc", "GOOGLE_USE_ADC"),
        description="Use Application Default Credentials (gcloud auth application-default login, metadata server).",
    )

    google_token_keys: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("google_token_keys", "DESKMCP_TOKEN_KEYS"),
        description="Keys sealing the tokens in the database: id:base64 (32 bytes), comma-separated, the first seals.",
    )
    google_token_principal: tuple[str, str] | None = Field(
        default=None,
        description="(issuer, subject) of the user whose token this is; set per user by deskmcp.serving.users.",
    )

    @property
    def google_token_path(self) -> Path:
        return self.google_token_file or self.workspace / ".deskmcp" / "google-token.json"


# -- token storage -------------------------------------------------------------------------


class TokenStore(Protocol):
    """Where a user's OAuth token lives: a file (`FileTokenStore`), or, for a deployment serving
    several users, a sealed row per user in PostgreSQL (`deskmcp.google.sealed_tokens`). A store that
    also has `refreshing()` (a context holding the stored token locked, with `.data` and `.save`)
    is refreshed under that lock, so two processes never spend one refresh token."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, data: dict[str, Any]) -> None: ...


class FileTokenStore:
    """The token as JSON in one file, mode 0600 in a 0700 folder, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IOFailure(
                f"The Google token file could not be read: {exc.strerror}.", {"path": str(self.path)}
            ) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AuthRequired(
                f"The Google token file is corrupt. Run `{AUTH_COMMAND}` to authorise again.",
                {"path": str(self.path), "command": AUTH_COMMAND},
            ) from exc
        return data if isinstance(data, dict) else None

    def save(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(parents=True, mode=PRIVATE_FOLDER)
        atomic_write_text(self.path, json.dumps(data, indent=None, sort_keys=True), mode=PRIVATE_FILE)


def token_store(settings: GoogleSettings) -> TokenStore:
    """The principal's row in the database when one is configured with a principal, else the file."""
    if settings.database_url and settings.google_token_principal is not None:
        from deskmcp.google.sealed_tokens import PostgresTokenStore, SealingKeys

        if settings.google_token_keys is None:
            raise BadRequest(
                "DESKMCP_DATABASE_URL keeps the users' Google tokens sealed: set DESKMCP_TOKEN_KEYS too.",
                {"setting": "DESKMCP_TOKEN_KEYS"},
            )
        issuer, subject = settings.google_token_principal
        keys = SealingKeys.parse(settings.google_token_keys.get_secret_value())
        return PostgresTokenStore(settings.database_url, keys, issuer, subject)
    return FileTokenStore(settings.google_token_path)


# -- the OAuth client ---------------------------------------------------------------------


def client_config(settings: GoogleSettings) -> dict[str, Any]:
    """The OAuth client as google-auth-oauthlib expects it (`{"installed"|"web": {...}}`)."""
    if settings.google_client_secrets is not None:
        try:
            data = json.loads(settings.google_client_secrets.read_text(encoding="utf-8"))
        except OSError as exc:
            raise BadRequest(
                f"GOOGLE_CLIENT_SECRETS {settings.google_client_secrets} cannot be read: {exc.strerror}.",
                {"path": str(settings.google_client_secrets)},
            ) from exc
        except json.JSONDecodeError as exc:
            raise ParseError(
                f"GOOGLE_CLIENT_SECRETS {settings.google_client_secrets} is not JSON: {exc.msg}.",
                {"path": str(settings.google_client_secrets)},
            ) from exc
        if not isinstance(data, dict) or not ({"installed", "web"} & data.keys()):
            raise ParseError(
                "GOOGLE_CLIENT_SECRETS is not an OAuth client file (no 'installed' or 'web' key). "
                "Download it from Google Cloud console > APIs & Services > Credentials.",
                {"path": str(settings.google_client_secrets)},
            )
        return data
    if settings.google_client_id and settings.google_client_secret:
        return {
            "installed": {
                "client_id": settings.google_client_id,
                "client_secret": settings.google_client_secret,
                "auth_uri": AUTH_URI,
                "token_uri": TOKEN_URI,
                "redirect_uris": ["http://localhost"],
            }
        }
    raise AuthRequired(
        "No Google OAuth client is configured. Set GOOGLE_CLIENT_SECRETS to the client JSON "
        "(or GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET), then run `deskmcp auth google`.",
        {"command": AUTH_COMMAND},
    )


def client_entry(config: dict[str, Any]) -> dict[str, Any]:
    """The client's own fields (client_id, client_secret, auth_uri, token_uri) of either kind."""
    entry = config.get("installed") or config.get("web") or {}
    return entry if isinstance(entry, dict) else {}


SIGN_IN_DEFAULT = ("sheets", "mail")
"""The scope sets a sign-in asks for when the request names none, of those the servers composed use."""


def sign_in_scopes(servers: Iterable[str]) -> tuple[str, ...]:
    """The scope sets of `servers` that use Google, in `SIGN_IN_DEFAULT`'s order; the first alone
    when none does (a sign-in is still offered)."""
    composed = set(servers)
    return tuple(n for n in SIGN_IN_DEFAULT if n in composed) or SIGN_IN_DEFAULT[:1]


def scopes_for(names: Iterable[str]) -> list[str]:
    """The OAuth scopes of the named servers (`mail`, `sheets`), in a stable order."""
    out: list[str] = []
    for name in names:
        try:
            wanted = SCOPES[name]
        except KeyError:
            raise BadRequest(f"No Google scopes for {name!r}. Valid: {', '.join(SCOPES)}.", {"name": name}) from None
        out.extend(s for s in wanted if s not in out)
    return out


# -- credentials --------------------------------------------------------------------------


def auth_required(why: str, **details: Any) -> AuthRequired:
    return AuthRequired(f"{why} Run `{AUTH_COMMAND}` to authorise deskmcp.", {"command": AUTH_COMMAND, **details})


def credentials(settings: GoogleSettings, scopes: Sequence[str], *, store: TokenStore | None = None) -> Credentials:
    """Credentials for `scopes`: service account, ADC, or the stored user token (refreshed silently)."""
    if settings.google_service_account_file is not None:
        with needs_extra("google", GOOGLE_FEATURE):
            from google.oauth2 import service_account

        try:
            sa = service_account.Credentials.from_service_account_file(
                str(settings.google_service_account_file), scopes=list(scopes)
            )
        except (OSError, ValueError) as exc:
            raise BadRequest(
                f"GOOGLE_SERVICE_ACCOUNT_FILE cannot be used: {exc}.",
                {"path": str(settings.google_service_account_file)},
            ) from exc
        if settings.google_delegated_user:
            sa = sa.with_subject(settings.google_delegated_user)
        return sa
    if settings.google_use_adc:
        with needs_extra("google", GOOGLE_FEATURE):
            import google.auth
            from google.auth.exceptions import DefaultCredentialsError

        try:
            adc, _project = google.auth.default(scopes=list(scopes))
        except DefaultCredentialsError as exc:
            raise AuthRequired(
                "GOOGLE_USE_ADC is set but no Application Default Credentials were found. "
                "Run `gcloud auth application-default login` or unset GOOGLE_USE_ADC.",
                {"reason": str(exc)},
            ) from exc
        return adc
    return user_credentials(settings, scopes, store=store or token_store(settings))


def user_credentials(settings: GoogleSettings, scopes: Sequence[str], *, store: TokenStore) -> Credentials:
    data = store.load()
    if not data:
        raise auth_required("deskmcp has no Google authorisation yet.")
    data = dict(data)
    # The client id/secret must travel with the token or refresh cannot work.
    if not data.get("client_id") or not data.get("client_secret"):
        try:
            entry = client_entry(client_config(settings))
        except AuthRequired:
            entry = {}
        data["client_id"] = data.get("client_id") or entry.get("client_id")
        data["client_secret"] = data.get("client_secret") or entry.get("client_secret")
    granted = set(data.get("scopes") or [])
    missing = [s for s in scopes if granted and s not in granted]
    if missing:
        raise auth_required("The stored Google authorisation lacks scopes this server needs.", missing_scopes=missing)
    if not data.get("refresh_token"):
        raise auth_required("The stored Google token has no refresh token.")
    if not data.get("client_id") or not data.get("client_secret"):
        raise auth_required("The stored Google token has no OAuth client id/secret to refresh it with.")
    return _stored_credentials_class().from_stored(data, scopes, store)


def _stored_credentials_class() -> Any:
    """The `Credentials` subclass that writes refreshed tokens back (built lazily: heavy import)."""
    global _STORED
    if _STORED is not None:
        return _STORED
    with needs_extra("google", GOOGLE_FEATURE):
        from google.auth.exceptions import RefreshError
        from google.oauth2.credentials import Credentials as UserCredentials

    class StoredCredentials(UserCredentials):
        _store: TokenStore | None = None

        @classmethod
        def from_stored(cls, data: dict[str, Any], scopes: Sequence[str], store: TokenStore) -> StoredCredentials:
            try:
                creds = cls.from_authorized_user_info(data, list(scopes) or None)
            except ValueError as exc:
                raise auth_required(f"The stored Google token is incomplete ({exc}).") from exc
            creds._store = store
            return creds

        def refresh(self, request: Any) -> None:
            refreshing = getattr(self._store, "refreshing", None)
            if refreshing is None:
                self._refresh(request)
                if self._store is not None:
                    self._store.save(json.loads(self.to_json()))
                    log.info("google token refreshed and saved")
                return
            with refreshing() as held:
                stored = held.data or {}
                if stored.get("token") and stored.get("token") != self.token:
                    # Another process refreshed while this one waited for the lock: take its token.
                    fresh = type(self).from_authorized_user_info({**json.loads(self.to_json()), **stored})
                    self._refresh_token = fresh.refresh_token
                    if not fresh.expired:
                        self.token, self.expiry = fresh.token, fresh.expiry
                        return
                self._refresh(request)
                held.save(json.loads(self.to_json()))
                log.info("google token refreshed and saved under its lock")

        def _refresh(self, request: Any) -> None:
            try:
                super().refresh(request)
            except RefreshError as exc:
                text = str(exc)
                if "invalid_grant" in text or "invalid_client" in text or "unauthorized_client" in text:
                    raise auth_required(
                        "Google refused the stored authorisation (revoked, or expired: apps in testing mode "
                        "get 7-day tokens).",
                        reason=text[:300],
                    ) from exc
                raise ExternalServiceError(
                    f"Refreshing the Google token failed: {text[:300]}", {"service": "google"}
                ) from exc

    _STORED = StoredCredentials
    return StoredCredentials


_STORED: Any = None


# -- building API clients -----------------------------------------------------------------


def build_service(api: str, version: str, creds: Credentials, *, http: Any = None) -> Any:
    """A googleapiclient service from the discovery document the library ships (no network).

    `http` is the transport under the authorisation layer (tests pass an `HttpMockSequence`);
    401 answers refresh the credentials and retry once.
    """
    with needs_extra("google", GOOGLE_FEATURE):
        import google_auth_httplib2
        import httplib2
        from googleapiclient.discovery import build

    transport = http if http is not None else httplib2.Http(timeout=60)
    authed = google_auth_httplib2.AuthorizedHttp(creds, http=transport)
    return build(api, version, http=authed, static_discovery=True, cache_discovery=False)


# -- the desktop flow (CLI) -----------------------------------------------------------------


def run_desktop_flow(
    settings: GoogleSettings, scopes: Sequence[str], *, open_browser: bool = True, port: int = 0
) -> dict[str, Any]:
    """Run the loopback OAuth flow in the user's browser and store the token. Returns it."""
    with needs_extra("google", GOOGLE_FEATURE):
        from google_auth_oauthlib.flow import InstalledAppFlow

    config = client_config(settings)
    flow = InstalledAppFlow.from_client_config(config, list(scopes))
    creds = flow.run_local_server(
        host="localhost",
        port=port,
        open_browser=open_browser,
        access_type="offline",
        prompt="consent",
        authorization_prompt_message="Open this address to authorise deskmcp:\n{url}",
        success_message="deskmcp is authorised. You can close this window.",
    )
    data = json.loads(creds.to_json())
    token_store(settings).save(data)
    return data
