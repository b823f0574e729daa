"""A private Dovecot on loopback for the IMAP tests: unprivileged, its own config, started once per session.

Each test that changes mail gets its own fresh user (a line added to the passwd-file, which
Dovecot re-reads when it changes), so tests never see each other's folders. The corpus user
holds the real .eml corpus plus generated conversations, appended once with chosen
INTERNALDATEs, and is only read.
"""

from __future__ import annotations

import grp
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from imapclient import IMAPClient

from tests.helpers.mail import make_mail
from tests.helpers.network import free_port

DOVECOT = "dovecot"
PASSWORD = "dovecot-pw"
POOL = 200
_users = itertools.count(1)


def _pool(base: Path) -> set[str]:
    return {line.split(":", 1)[0] for line in (base / "users").read_text(encoding="utf-8").splitlines()}


CONFIG = """\
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
info_log_path = {base}/dovecot.log
listen = 127.0.0.1
protocols = imap
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {user}
default_internal_group = {group}
default_login_user = {login_user}
login_trusted_networks = 127.0.0.0/8
first_valid_uid = 0
first_valid_gid = 0
mail_uid = {uid}
mail_gid = {gid}
mail_location = maildir:~/Maildir
mail_plugins =
service imap-login {{
  inet_listener imap {{
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service stats {{
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {base}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {base}/users
  default_fields = home={homes}/%u
}}
namespace inbox {{
  inbox = yes
  separator = {separator}
  mailbox Sent {{
    special_use = \\Sent
  }}
  mailbox Drafts {{
    special_use = \\Drafts
  }}
  mailbox Trash {{
    special_use = \\Trash
  }}
  mailbox Junk {{
    special_use = \\Junk
  }}
  mailbox Archive {{
    special_use = \\Archive
  }}
}}
"""


@dataclass
class Dovecot:
    """A running Dovecot: where it listens and how to make users on it."""

    host: str
    port: int
    base: Path
    separator: str
    homes: Path
    mail_uid: int
    mail_gid: int
    users: list[str] = field(default_factory=list)

    def add_user(self) -> str:
        """A fresh user: one of those written before start (Dovecot re-reads its passwd-file at
        most once a second, so users added while it runs could be refused for a moment)."""
        user = f"user{next(_users)}@corp.test"
        if user not in _pool(self.base):
            raise RuntimeError("the Dovecot test users are used up; raise POOL in tests/mail/dovecot.py")
        home = self.homes / user
        home.mkdir(parents=True, exist_ok=True)
        if os.getuid() == 0:
            os.chown(home, self.mail_uid, self.mail_gid)
        self.users.append(user)
        return user

    def client(self, user: str) -> IMAPClient:
        client = IMAPClient(self.host, port=self.port, ssl=False, timeout=10)
        client.login(user, PASSWORD)
        return client

    def settings(self, user: str, **extra: Any) -> dict[str, Any]:
        return {
            "backend": "imap",
            "imap_host": self.host,
            "imap_port": self.port,
            "imap_user": user,
            "imap_password": PASSWORD,
            "imap_security": "none",
            "address": user,
            "mode": "send",
            **extra,
        }


def start(base: Path, *, separator: str = "/") -> tuple[Dovecot, subprocess.Popen[bytes]]:
    """Write a config under `base` and start `dovecot -F` on a free loopback port; wait until it accepts."""
    binary = shutil.which(DOVECOT) or shutil.which(DOVECOT, path="/usr/sbin:/usr/local/sbin")
    if binary is None:
        pytest.skip("dovecot is not installed (apt-get install dovecot-imapd); the Dovecot IMAP tests need it")
    base.mkdir(parents=True, exist_ok=True)
    (base / "users").write_text(
        "".join(f"user{i}@corp.test:{{PLAIN}}{PASSWORD}:::::\n" for i in range(1, POOL + 1)), encoding="utf-8"
    )
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    if os.getuid() == 0:
        # Dovecot never runs login or mail processes as root: both get an unprivileged account,
        # and the homes a folder that account can reach (pytest's temp folders are 0700).
        login_user = mail_user = _unprivileged()
        homes = Path(tempfile.mkdtemp(prefix="deskmcp-dovecot-"))
        homes.chmod(0o755)
    else:
        login_user = mail_user = user
        homes = base / "homes"
        homes.mkdir()
    account = pwd.getpwnam(mail_user)
    server = Dovecot("127.0.0.1", free_port(), base, separator, homes, account.pw_uid, account.pw_gid)
    conf = base / "dovecot.conf"
    conf.write_text(
        CONFIG.format(
            base=base,
            port=server.port,
            user=user,
            login_user=login_user,
            group=group,
            uid=server.mail_uid,
            gid=server.mail_gid,
            homes=homes,
            separator=separator,
        ),
        encoding="utf-8",
    )
    return server, launch(server)


def launch(server: Dovecot) -> subprocess.Popen[bytes]:
    """Run `dovecot -F` on the configuration `start` wrote (the same port, users and mail, so it
    also starts one that was stopped again); wait until it greets."""
    binary = shutil.which(DOVECOT) or shutil.which(DOVECOT, path="/usr/sbin:/usr/local/sbin") or DOVECOT
    conf = server.base / "dovecot.conf"
    proc = subprocess.Popen([binary, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection((server.host, server.port), timeout=1) as sock:
                if sock.recv(100).startswith(b"* OK"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop(server, proc)
            raise RuntimeError(f"Dovecot did not start: {_log(server.base)}")
        try:  # waits a little, and notices a server that exited
            proc.wait(timeout=0.1)
            raise RuntimeError(f"Dovecot exited: {proc.stderr.read() if proc.stderr else b''!r} {_log(server.base)}")
        except subprocess.TimeoutExpired:
            pass
    return proc


def _unprivileged() -> str:
    for name in ("dovenull", "nobody"):
        try:
            return pwd.getpwnam(name).pw_name
        except KeyError:
            continue
    pytest.skip("running as root, Dovecot needs an unprivileged account (dovenull or nobody)")


def _log(base: Path) -> str:
    path = base / "dovecot.log"
    return path.read_text(encoding="utf-8", errors="replace")[-2000:] if path.exists() else ""


def halt(proc: subprocess.Popen[bytes]) -> None:
    """Stop Dovecot (SIGTERM, as `systemctl stop` does: it ends every IMAP session), keeping its mail."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def stop(server: Dovecot, proc: subprocess.Popen[bytes]) -> None:
    halt(proc)
    if not server.homes.is_relative_to(server.base):
        shutil.rmtree(server.homes, ignore_errors=True)


@pytest.fixture(scope="session", name="dovecot")
def dovecot_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dovecot]:
    """Dovecot with `/` as its hierarchy separator (as most providers)."""
    server, proc = start(tmp_path_factory.mktemp("dovecot"), separator="/")
    try:
        yield server
    finally:
        stop(server, proc)


@pytest.fixture(scope="session", name="dovecot_dot")
def dovecot_dot_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dovecot]:
    """Dovecot with `.` as its hierarchy separator (Maildir++ layout, Courier-style servers)."""
    server, proc = start(tmp_path_factory.mktemp("dovecot-dot"), separator=".")
    try:
        yield server
    finally:
        stop(server, proc)


@pytest.fixture(name="mailbox")
def mailbox_fixture(dovecot: Dovecot) -> str:
    """A fresh, empty user on the shared Dovecot, for a test that changes mail."""
    return dovecot.add_user()


# -- the corpus user: real .eml files plus generated conversations, loaded once --------------

BASE_DAY = datetime(2026, 11, 20, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Loaded:
    """What was appended where, with the INTERNALDATE each message got."""

    folder: str
    raw: bytes
    when: datetime
    flags: tuple[bytes, ...] = ()
    name: str = ""


def append_all(server: Dovecot, user: str, messages: list[Loaded]) -> None:
    client = server.client(user)
    try:
        for folder in {m.folder for m in messages}:
            if folder != "INBOX" and not client.folder_exists(folder):
                client.create_folder(folder)
        for m in messages:
            client.append(m.folder, m.raw, flags=m.flags, msg_time=m.when)
    finally:
        client.logout()


def generated_threads() -> list[Loaded]:
    """Conversations across INBOX, Sent and a project folder, some replies carrying only In-Reply-To,
    non-ASCII subjects and senders, and mail appended out of date order."""
    out: list[Loaded] = []

    def add(folder: str, raw: bytes, days_ago: float, flags: tuple[bytes, ...] = ()) -> None:
        out.append(Loaded(folder, raw, BASE_DAY - timedelta(days=days_ago), flags))

    add("INBOX", make_mail("Überprüfung des Budgets", "Bitte prüfen.", sender="Jörg <jorg@corp.test>",
                           days_ago=5, msgid="<de1@corp.test>"), 5)  # fmt: skip
    add("INBOX", make_mail("Visita", "Hola.", sender="José Díaz <jose@corp.test>", days_ago=6,
                           msgid="<es1@corp.test>"), 6)  # fmt: skip
    add("INBOX", make_mail("会議の議事録", "来週の会議について。", sender="Tanaka <tanaka@corp.test>", days_ago=7,
                           msgid="<ja1@corp.test>"), 7)  # fmt: skip
    # A thread: question in INBOX, our answer in Sent, follow-up filed into Projects/Acme.
    add("INBOX", make_mail("Acme renewal", "Can we renew?", sender="Ann <ann@acme.test>", days_ago=4,
                           msgid="<acme1@acme.test>"), 4)  # fmt: skip
    add("Sent", make_mail("Re: Acme renewal", "Yes.", sender="me@corp.test", to="ann@acme.test", days_ago=3,
                          msgid="<acme2@corp.test>", in_reply_to="<acme1@acme.test>",
                          references="<acme1@acme.test>"), 3, (b"\\Seen",))  # fmt: skip
    add("Projects", make_mail("Re: Acme renewal", "Signed.", sender="Ann <ann@acme.test>", days_ago=2,
                              msgid="<acme3@acme.test>", in_reply_to="<acme2@corp.test>"), 2)  # fmt: skip
    # Old mail appended last: an archive import.
    add("INBOX", make_mail("Ancient history", "From last decade.", days_ago=2000, msgid="<old1@corp.test>"), 2000)
    add("Trash", make_mail("Acme renewal spam", "Deleted.", days_ago=1, msgid="<trash1@corp.test>",
                           references="<acme1@acme.test>"), 1)  # fmt: skip
    return out


def corpus_messages(corpus: Path) -> list[Loaded]:
    """The real .eml files, each with an INTERNALDATE a day apart (newest last in the folder)."""
    files = sorted(corpus.rglob("*.eml"))
    return [
        Loaded("INBOX", path.read_bytes(), BASE_DAY - timedelta(days=400 - i), name=path.name)
        for i, path in enumerate(files)
    ]
