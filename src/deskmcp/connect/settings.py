"""What `deskmcp connect` reads from the environment: the token it sends, or how it identifies
itself to the remote's authorization server."""

from __future__ import annotations

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalText
from deskmcp.core.settings import env_alias
from deskmcp.core.shared_settings import ServerTokenSettings


class ConnectSettings(ServerTokenSettings):
    """Environment: `DESKMCP_REMOTE_TOKEN`, else `DESKMCP_TOKEN` (`ServerTokenSettings`: the same
    token on both sides), `DESKMCP_CONNECT_CLIENT_*`."""

    remote_token: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("remote_token", "DESKMCP_REMOTE_TOKEN"),
        description="Static bearer token sent to the remote deskmcp (its DESKMCP_TOKEN, which is sent when this "
        "is unset); neither set: OAuth sign-in.",
    )
    client_metadata_url: OptionalText = Field(
        default=None,
        validation_alias=env_alias("client_metadata_url", "DESKMCP_CONNECT_CLIENT_METADATA_URL"),
        description="URL of this client's ID metadata document, used where the authorization server supports them.",
    )
    client_id: OptionalText = Field(
        default=None,
        validation_alias=env_alias("client_id", "DESKMCP_CONNECT_CLIENT_ID"),
        description="A client id registered at the authorization server beforehand (otherwise it registers itself).",
    )
    client_secret: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("client_secret", "DESKMCP_CONNECT_CLIENT_SECRET"),
        description="That client's secret, when it has one.",
    )

    @property
    def sent_token(self) -> str | None:
        """The token sent to the remote: DESKMCP_REMOTE_TOKEN when it is set (empty: none), else
        DESKMCP_TOKEN, else None (sign in with OAuth)."""
        if self.remote_token is not None:
            return self.remote_token.get_secret_value() or None
        return self.token_text
