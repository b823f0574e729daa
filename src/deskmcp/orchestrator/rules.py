"""The rules decider: `triage-rules.yaml` in the vault, matched top to bottom, first match wins.

Each rule matches on `from`, `to`, `subject`, `body` and `labels` (regular expressions,
case-insensitive, all given must match) and names a decision; `reply` is the draft body for
`draft_reply` and `urgent`, with `{sender_name}`, `{sender}`, `{subject}` and `{received}`
filled in. When no rule matches, `default` applies (needs_info unless set).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from deskmcp.core.errors import IOFailure, ParseError
from deskmcp.core.files import atomic_write_text
from deskmcp.orchestrator.layout import sender_name
from deskmcp.orchestrator.models import REPLY_DECISIONS, Decision, Deferred, TriageDecision, TriageItem

RULES_FILE = "triage-rules.yaml"

EXAMPLE = """\
# Triage rules for the deskmcp orchestrator.
#
# Each mail in Needs_Action/ is matched against the rules from top to bottom; the first rule
# whose every field matches decides. Fields are regular expressions, case-insensitive:
#   from, to, subject, body, labels (matches any one of the mail's labels)
# Decisions:
#   draft_reply  write a reply into Drafts/ for you to approve (move it to Approved/ to send)
#   urgent       the same, marked priority: urgent
#   archive      nothing to do: the note goes to Done/
#   needs_info   stays in Needs_Action/ for you to look at
#   delegate     stays in Needs_Action/ with a note saying who should handle it (delegate_to)
# A reply may use {sender_name}, {sender}, {subject} and {received}.
# Nothing is ever sent without your approval.

rules:
  - name: newsletters
    match:
      from: "(newsletter|no-?reply|notifications?)@"
    decision: archive
    reason: Automated mail, nothing to answer

  - name: outage
    match:
      subject: "(outage|down|urgent|incident)"
    decision: urgent
    reason: Looks like an incident
    reply: |
      Hi {sender_name},

      Thanks for the heads-up about "{subject}". I'm looking into it now and will get back to you shortly.

  - name: meeting requests
    match:
      subject: "(meet|call|catch up|sync)"
    decision: draft_reply
    reason: A meeting request
    reply: |
      Hi {sender_name},

      Thanks for reaching out. That works for me; could you send a calendar invitation?

  # - name: invoices to finance
  #   match:
  #     subject: invoice
  #   decision: delegate
  #   delegate_to: finance@example.com
  #   reason: Invoices are handled by finance

default:
  decision: needs_info
  reason: No rule matched; decide yourself
"""

FIELDS = ("from", "to", "subject", "body", "labels")


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = ""
    match: dict[str, str] = Field(default_factory=dict)
    decision: Decision
    reason: str = ""
    reply: str | None = None
    delegate_to: str | None = None

    @field_validator("match")
    @classmethod
    def _check_match(cls, value: dict[str, str]) -> dict[str, str]:
        for key, pattern in value.items():
            if key not in FIELDS:
                raise ValueError(f"unknown field {key!r} (use {', '.join(FIELDS)})")
            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise ValueError(f"{key}: bad regular expression {pattern!r}: {exc}") from exc
        return value


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[Rule] = []
    default: Rule | None = None


class _Template(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def ensure_rules_file(root: Path) -> Path:
    """The vault's rules file, written with a commented example when it does not exist."""
    path = root / RULES_FILE
    if not path.exists():
        try:
            atomic_write_text(path, EXAMPLE)
        except OSError as exc:
            raise IOFailure(f"Could not write {path}: {exc.strerror}.", {"path": str(path)}) from exc
    return path


def load_rules(path: Path, *, example_when_missing: bool = False) -> RuleSet:
    """The rules in `path`; with `example_when_missing`, a missing file reads as the example (in memory)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError as exc:
        if not example_when_missing:
            raise IOFailure(f"Cannot read {path.name}: {exc.strerror}.", {"path": str(path)}) from exc
        data = yaml.safe_load(EXAMPLE)
    except OSError as exc:
        raise IOFailure(f"Cannot read {path.name}: {exc.strerror}.", {"path": str(path)}) from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ParseError(f"{path.name} is not valid YAML: {exc}", {"path": str(path)}) from exc
    if not isinstance(data, dict):
        raise ParseError(f"{path.name} must be a mapping with 'rules' and 'default'.", {"path": str(path)})
    try:
        return RuleSet.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise ParseError(f"{path.name} is invalid: {problems}", {"path": str(path)}) from exc


def _matches(rule: Rule, item: TriageItem) -> bool:
    values: dict[str, Any] = {
        "from": item.sender,
        "to": f"{item.to} {item.cc}".strip(),
        "subject": item.subject,
        "body": item.body,
        "labels": item.labels,
    }
    for key, pattern in rule.match.items():
        regex = re.compile(str(pattern), re.IGNORECASE)
        value = values[key]
        if isinstance(value, list):
            if not any(regex.search(v) for v in value):
                return False
        elif not regex.search(value):
            return False
    return True


def apply_rule(rule: Rule, item: TriageItem) -> TriageDecision | Deferred:
    reply = None
    if rule.decision in REPLY_DECISIONS:
        if not rule.reply:
            return Deferred(reason=f"Rule {rule.name!r} decides {rule.decision} but has no reply text.")
        fields = _Template(
            sender_name=sender_name(item.sender), sender=item.sender, subject=item.subject, received=item.received
        )
        try:
            reply = rule.reply.format_map(fields)
        except (ValueError, IndexError, AttributeError) as exc:
            return Deferred(reason=f"Rule {rule.name!r} has a broken reply template: {exc}")
    reason = rule.reason or (f"Rule {rule.name!r}" if rule.name else "Rule matched")
    return TriageDecision(decision=rule.decision, reason=reason, reply=reply, delegate_to=rule.delegate_to)


class RulesDecider:
    """`write_example`: a missing rules file is written with the commented example when a real pass
    starts (`prepare`) or first decides; otherwise (a dry run) the example is used in memory."""

    name = "rules"

    def __init__(self, root: Path, *, write_example: bool = True) -> None:
        self.root = root
        self.path = root / RULES_FILE
        self.write_example = write_example

    def prepare(self) -> None:
        if self.write_example:
            ensure_rules_file(self.root)

    async def decide(self, item: TriageItem) -> TriageDecision | Deferred | None:
        try:
            self.prepare()
            ruleset = load_rules(self.path, example_when_missing=not self.write_example)
        except (ParseError, IOFailure) as exc:
            return Deferred(reason=exc.message)
        for rule in ruleset.rules:
            if _matches(rule, item):
                return apply_rule(rule, item)
        default = ruleset.default or Rule(decision="needs_info", reason="No rule matched; decide yourself")
        return apply_rule(default, item)
