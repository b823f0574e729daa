"""A send killed after its audit line and before the provider answered is sent exactly once on retry."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deskmcp.mail.server import Settings
from deskmcp.mail.service import MailService
from tests.helpers.mail import SmtpSink, audit_lines

pytestmark = pytest.mark.e2e

SEND = """
from deskmcp.mail.server import Settings
from deskmcp.mail.service import MailService
MailService(Settings()).send_email("bob@example.org", "Killed", "body", idempotency_key="kill-1")
"""


def test_send_killed_before_the_provider_answers_is_sent_once_on_retry(workspace: Path, smtp_sink: SmtpSink) -> None:
    # A server that accepts the connection and never answers: the send hangs after its audit line.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        silent.settimeout(60)
        env = {
            **os.environ,
            "DESKMCP_WORKSPACE": str(workspace),
            "MAIL_SMTP_HOST": "127.0.0.1",
            "MAIL_SMTP_PORT": str(silent.getsockname()[1]),
            "MAIL_SMTP_SECURITY": "none",
            "MAIL_TIMEOUT": "60",
        }
        child = subprocess.Popen([sys.executable, "-c", SEND], env=env, stderr=subprocess.PIPE)
        try:
            conn, _ = silent.accept()  # the child connected: its audit line is already on disk
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=30) == -signal.SIGKILL
            conn.close()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    [killed] = audit_lines(workspace)
    assert killed["event"] == "pre_send_audit" and killed["idempotency_key"] == "kill-1"

    settings = Settings(workspace=workspace, smtp_host=smtp_sink.host, smtp_port=smtp_sink.port, smtp_security="none")
    service = MailService(settings)
    try:
        retried = service.send_email("bob@example.org", "Killed", "body", idempotency_key="kill-1")
        again = service.send_email("bob@example.org", "Killed", "body", idempotency_key="kill-1")
    finally:
        service.close()
    assert len(smtp_sink.messages) == 1
    assert retried.rfc_message_id == killed["rfc_message_id"]  # the very message announced before the kill
    assert again.duplicate is True and again.message_id == retried.message_id
    assert [line.get("outcome") for line in audit_lines(workspace)] == [None, "retry", "sent"]
