"""What `deskmcp connect` reads from the environment: the token it sends, or how it identifies
itself to the remote's authorization server."""

from __future__ import annotations

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalText
from deskmcp.core.settings import Settings, env_alias


class ConnectSettings(Settings):
    """Environment: `DESKMCP_REMOTE_TOKEN` (or `DESKMCP_TOKEN`), `DESKMCP_CONNECT_CLIENT_*`."""

    token: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("token", "DESKMCP_REMOTE_TOKEN", "DESKMCP_TOKEN"),
        description="Static bearer token sent to the remote deskmcp (its DESKMCP_TOKEN); unset: OAuth sign-in.",
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
