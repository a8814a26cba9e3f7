"""The language reference (``docs/reference/``) covers the whole vocabulary: every keyword of the
grammar, every diagnostic code and every run-time error code appears in its code (inline code
spans or code blocks), and the index links every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import DOCS, REPO

REFERENCE = DOCS / "reference"


def language_vocabulary() -> dict[str, set[str]]:
    """The words the reference must cover, by kind: ``keyword`` (every keyword of `.flow`),
    ``diagnostic code`` (the checker's registry) and ``run-time error code`` (the codes a step
    or run can fail with) — as the language's one vocabulary defines them."""
    from agentflow.core.diagnostics import CODES
    from agentflow.core.vocabulary import ERROR_CODES, KEYWORDS

    return {
        "keyword": set(KEYWORDS),
        "diagnostic code": set(CODES),
        "run-time error code": set(ERROR_CODES),
    }


def _code_words(*extra: Path) -> set[str]:
    """Every word written as code in the reference (inline spans and fenced blocks), and in the
    ``extra`` pages."""
    words: set[str] = set()
    for page in [*REFERENCE.glob("*.md"), *extra]:
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
        rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
        spans = re.findall(r"`([^`\n]+)`", rest)
        for code in blocks + spans:
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", code))
    return words


@pytest.mark.parametrize("kind", ["keyword", "diagnostic code", "run-time error code"])
def test_reference_mentions_every_word_of_the_vocabulary(kind):
    words = language_vocabulary()[kind]
    # the table of every diagnostic code is docs/diagnostics.md's, which the reference links
    # (one place to add a code's row: docs/ARCHITECTURE.md's checklist)
    extra = [DOCS / "diagnostics.md"] if kind == "diagnostic code" else []
    missing = sorted(words - _code_words(*extra))
    assert missing == [], f"docs/reference/ never shows the {kind}s {missing} as code"


def test_reference_index_links_every_page():
    index = (REFERENCE / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([a-z0-9-]+\.md)(?:#[^)]*)?\)", index))
    pages = {p.name for p in REFERENCE.glob("*.md")} - {"README.md"}
    assert pages - linked == set(), f"docs/reference/README.md does not link {pages - linked}"
    assert linked - pages == set(), f"docs/reference/README.md links missing pages {linked - pages}"


def test_reference_links_point_at_existing_pages_and_sections():
    """Relative links of the reference, the tutorial and the README resolve, anchors included."""
    pages = [*REFERENCE.glob("*.md"), *(DOCS / "tutorial").glob("*.md"), REPO / "README.md"]
    problems = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://|mailto:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                problems.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                problems.append(f"{page.relative_to(REPO)}: {target}: no such section")
    assert problems == []


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower-case, punctuation dropped, blanks → ``-``."""
    out = set()
    for heading in re.findall(r"^#{1,6} (.*)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def cli_options() -> set[tuple[str, str]]:
    """``(command, option)`` for every option of every ``flowc`` command (``-o`` and
    ``--output`` alike), read from the click command tree."""
    import click

    from agentflow.cli import main

    out: set[tuple[str, str]] = set()

    def walk(cmd: click.Command, path: str) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")
            return
        for param in cmd.params:
            out.update((path, o) for o in param.opts if o.startswith("-"))

    walk(main, "flowc")
    return out


def test_cli_reference_names_every_command_and_option():
    text = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    missing = sorted(
        f"{cmd} {opt}" for cmd, opt in cli_options() if cmd not in text or opt not in text
    )
    assert missing == [], f"docs/reference/cli.md does not describe {missing}"


def config_keys() -> set[str]:
    """Every key ``flow.toml`` accepts, as the configuration models name them (field aliases
    included; ``path`` is where the file came from, not a key)."""
    from pydantic import BaseModel

    from agentflow.runtime.config import Config

    keys: set[str] = set()
    seen: set[type] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, field in model.model_fields.items():
            keys.add(field.alias or name)
            for inner in _models_in(field.annotation):
                walk(inner)

    walk(Config)
    return keys - {"path"}


def _models_in(annotation) -> list[type]:
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def test_configuration_reference_names_every_flow_toml_key():
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", _code_text(REFERENCE / "configuration.md")))
    missing = sorted(config_keys() - words)
    assert missing == [], f"docs/reference/configuration.md never shows the keys {missing}"


def _code_text(page: Path) -> str:
    """The code of a page: its fenced blocks and inline code spans, joined."""
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    return "\n".join(blocks + re.findall(r"`([^`\n]+)`", rest))


def test_diagnostics_page_tables_every_registered_code():
    """docs/diagnostics.md opens with one table row per checker diagnostic code (the `plan-*`
    codes have their own table in the reference's errors page), each linking its section, and
    each row's severity is the registered one."""
    from agentflow.core.diagnostics import CODES

    text = (DOCS / "diagnostics.md").read_text(encoding="utf-8")
    table = text.split("## Every diagnostic code", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| \[`([a-z0-9-]+)`\]\(#\1\) \| (\w+) \|", table, re.M))
    expected = {c: info.severity for c, info in CODES.items() if not c.startswith("plan-")}
    assert rows == expected
    plan_table = (REFERENCE / "errors.md").read_text(encoding="utf-8")
    plan_codes = {c for c in CODES if c.startswith("plan-")}
    assert {c for c in plan_codes if f"`{c}`" not in plan_table} == set()
