"""A scripted "model" for the pattern examples (examples/patterns/*.flow): NOT a real LLM.

``PatternScript()`` is a callable script for :class:`support.chat_server.ChatServer`. It tells
the agents apart by their system prompt (the profiles of examples/patterns/flow.toml) and the
task, and answers from what the request holds — the topic, the outline, the diff, the code,
the members' results — by fixed rules:

- the writer outlines (three points on the topic) and writes one paragraph per point; the
  translator marks the text as translated into the asked language;
- for evaluator-optimizer, the writer drafts and revises (saying what it fixed) and the critic
  approves a draft once it has been revised;
- the classifier routes by keywords (charged / refund → ``refund``; error / crash / install →
  ``technical``; else ``general``), and each specialist answers in its own words;
- the reviewer flags, per aspect, what the diff shows (a removed check, a loop in a loop, a
  one-letter name); the auditors flag code that builds SQL from strings or calls ``eval``;
- the team's lead splits a change into a subtask for each of ``backend`` and ``frontend`` and
  merges the members' notes; each member reports its part done;
- a judge (``where judge``, ``verify { judge … }``) says ``yes``;
- any other agent or task (a pattern added later) gets a value generated from its contract by
  the built-in test model's generator, seeded by the request, so a recording is reproducible;
  its boolean fields named like an approval (``approved``, ``done``, ``ok`` …) are true, so a
  loop waiting for a critic ends.

``scripts/record_pattern_cassettes.py`` records the examples' cassettes against it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from agentflow.runtime.models.base import JUDGE_SYSTEM_PROMPT
from agentflow.runtime.models.test_model import generate_value
from agentflow.testing.chat_server import answer, system_text, text

_SCHEMA = "conforms to this JSON Schema: "

#: boolean fields a generated answer sets true: an unknown critic approves
_APPROVAL = {"approved", "approve", "accepted", "accept", "done", "ok", "passed", "satisfied"}


def _user(request: dict[str, Any]) -> str:
    return "\n".join(
        m.get("content") or ""
        for m in request.get("messages", [])
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    )


def _input(user: str) -> Any:
    """The structured input shown after the task (``Input (JSON):``), or None."""
    _, found, rest = user.partition("Input (JSON):\n")
    if not found:
        return None
    try:
        return json.loads(rest)
    except ValueError:
        return None


def _schema(system: str) -> Any:
    _, found, rest = system.partition(_SCHEMA)
    if not found:
        return None
    try:
        return json.loads(rest.strip())
    except ValueError:
        return None


def _after(user: str, marker: str) -> str:
    return user.partition(marker)[2].strip()


class PatternScript:
    """The callable script (see the module docstring)."""

    def __call__(self, request: dict[str, Any]) -> Any:
        system, user = system_text(request), _user(request)
        if system.startswith(JUDGE_SYSTEM_PROMPT):
            return text("yes")
        for prefix, rule in self.RULES:
            if system.startswith(prefix):
                value = rule(self, user)
                if value is not None:
                    return answer(value)
        return self.generated(request, system)

    # -- prompt chaining ------------------------------------------------------------------------
    def writer(self, user: str) -> Any:
        if user.startswith("Outline an announcement of "):
            topic, _, audience = (
                user.removeprefix("Outline an announcement of ").rstrip(".").rpartition(" for ")
            )
            return {
                "title": f"{topic} for {audience}",
                "points": [f"what {topic} is", f"why {audience} should care", "how to start"],
            }
        if user.startswith("Write the announcement from this outline"):
            outline = (_input(user) or {}).get("outline") or {}
            points = outline.get("points") or []
            body = "\n\n".join(f"{p[0].upper()}{p[1:]}: in one paragraph." for p in points)
            return {"title": outline.get("title", "Announcement"), "body": body}
        # evaluator-optimizer: a first draft, then revisions that say what they fixed
        if user.startswith("Write a short piece on "):
            topic = user.removeprefix("Write a short piece on ").partition(".")[0]
            return {"text": f"A first draft on {topic}."}
        if user.startswith("Revise:"):
            draft, _, fix = user.removeprefix("Revise:").strip().partition("\nFix: ")
            return {"text": f"{draft.strip()} (revised: {fix.strip()})"}
        return None

    def critic(self, user: str) -> Any:
        """Approves a draft once it has been revised; asks for a revision before."""
        if "(revised" in user:
            return {"approved": True, "notes": ""}
        return {"approved": False, "notes": "make it shorter"}

    def translator(self, user: str) -> Any:
        language = re.search(r"into (\w+)", user)
        tag = f"[{language.group(1) if language else 'translated'}]"
        doc = (_input(user) or {}).get("announcement") or {}
        return {"title": f"{tag} {doc.get('title', '')}", "body": f"{tag} {doc.get('body', '')}"}

    # -- routing --------------------------------------------------------------------------------
    def classifier(self, user: str) -> Any:
        request = _after(user, "request:").lower()
        if any(w in request for w in ("charged", "refund", "invoice")):
            return {"kind": "refund", "reason": "the customer asks for money back"}
        if any(w in request for w in ("error", "crash", "install")):
            return {"kind": "technical", "reason": "something does not work"}
        return {"kind": "general", "reason": "neither a refund nor a fault"}

    def refunds(self, user: str) -> Any:
        return {"answer": "The duplicate charge is refunded within 5 days.", "escalate": False}

    def tech(self, user: str) -> Any:
        return {"answer": "Reinstall, then send the log if it happens again.", "escalate": False}

    def desk(self, user: str) -> Any:
        return {"answer": "We are open from 9 to 5.", "escalate": False}

    # -- parallelization ------------------------------------------------------------------------
    def reviewer(self, user: str) -> Any:
        found = re.search(r"for (\w+) only", user)
        aspect = found.group(1) if found else ""
        diff = user.partition("\n")[2]
        removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-")]
        added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+")]
        findings = []
        if aspect == "security" and any("check" in line for line in removed):
            findings.append({"severity": "blocker", "note": "a check was removed"})
        if aspect == "performance" and sum("for " in line for line in added) > 1:
            findings.append({"severity": "warning", "note": "a loop inside a loop"})
        if aspect == "readability" and any(re.search(r"\b[a-z] =", line) for line in added):
            findings.append({"severity": "info", "note": "a one-letter name"})
        return {"findings": findings}

    def auditor(self, user: str) -> Any:
        found = re.search(r"As (.+?), decide", user)
        lens = found.group(1) if found else "an auditor"
        code = user.partition(":\n")[2]
        sql = re.search(r"(SELECT|INSERT|UPDATE|DELETE)[^\"]*\"\s*\+", code)
        if "eval(" in code or sql:
            why = "calls eval" if "eval(" in code else "builds SQL from input"
            return {"vulnerable": True, "reason": f"{lens}: it {why}"}
        # the compliance auditor is strict about input it cannot see validated
        strict = lens == "a compliance auditor" and "input" in code
        reason = "unvalidated input" if strict else "no injection point"
        return {"vulnerable": strict, "reason": f"{lens}: {reason}"}

    # -- orchestrator-workers -------------------------------------------------------------------
    def lead(self, user: str) -> Any:
        if user.startswith("Split this change"):
            change = _after(user, "owns that part:")
            return {
                "subtasks": [
                    {"owner": "backend", "instructions": f"implement: {change}"},
                    {"owner": "frontend", "instructions": f"document: {change}"},
                ]
            }
        results = (_input(user) or {}).get("results") or []
        parts = "; ".join(f"{r.get('owner')}: {r.get('notes')}" for r in results)
        return {"summary": f"{len(results)} parts done ({parts})"}

    @staticmethod
    def member(owner: str):
        """The rule of the team member ``owner``: its part, reported done."""

        def rule(self: PatternScript, user: str) -> Any:
            part = _after(user, "Do your part of the change:")
            return {"owner": owner, "ok": True, "notes": f"did '{part}'"}

        return rule

    RULES: list[tuple[str, Any]] = []

    # -- anything else --------------------------------------------------------------------------
    def generated(self, request: dict[str, Any], system: str) -> Any:
        """A value generated from the request's contract, seeded by the request itself (text
        when it has none)."""
        schema = _schema(system)
        if schema is None:
            return text("done")
        key = json.dumps([system, _user(request)], sort_keys=True)
        rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
        value = generate_value(schema, rng)
        # a critic, judge or checker of a pattern it does not know approves, so loops end
        for obj in (value, value.get("value") if isinstance(value, dict) else None):
            if isinstance(obj, dict):
                for name in _APPROVAL & obj.keys():
                    if isinstance(obj[name], bool):
                        obj[name] = True
        return answer(value)


PatternScript.RULES = [
    ("You write clear, short announcements.", PatternScript.writer),
    ("You critique drafts", PatternScript.critic),
    ("You translate faithfully", PatternScript.translator),
    ("You classify customer support requests.", PatternScript.classifier),
    ("You handle refund requests", PatternScript.refunds),
    ("You diagnose technical problems", PatternScript.tech),
    ("You answer general questions", PatternScript.desk),
    ("You review code changes.", PatternScript.reviewer),
    ("You audit code for security", PatternScript.auditor),
    ("You lead the team", PatternScript.lead),
    ("You own the server code.", PatternScript.member("backend")),
    ("You own the documentation", PatternScript.member("frontend")),
]
