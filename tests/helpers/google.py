"""The Google account settings read from the environment, which tests of Google-backed servers clear."""

from __future__ import annotations

GOOGLE_ENVIRONMENT = (
    "GOOGLE_CLIENT_SECRETS",
    "GOOGLE_CLIENT_ID",
    "GOOGLE_CLIENT_SECRET",
    "GOOGLE_TOKEN_FILE",
    "GOOGLE_SERVICE_ACCOUNT_FILE",
    "GOOGLE_DELEGATED_USER",
    "GOOGLE_USE_ADC",
)
