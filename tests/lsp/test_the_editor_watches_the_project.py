"""The language server and the files a document's check reads besides its own text
(docs/reference/programs.md "import", docs/decisions.md "Imports: renaming, libraries, the
language server's project"): an imported file that is not open, changed on disk, checks its
importers again — noticed by the server's own look at those files, or by the client's
`workspace/didChangeWatchedFiles` (registered when the client can); the project's `flow.toml`
(the one `flowc check` reads, found by the same rule) gives the same warnings as `flowc check`,
and a change to it checks the documents again; an imported file's own warnings are its own."""

from __future__ import annotations

import sys
import time

import pytest

from agentflow.api import agent_profile_warnings, check_source
from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SHARED = 'type Level = "a" | "b"?\ntype Ticket { title: text, level: Level }\n'
BROKEN = "type Ticket { title: txt }\n"
MAIN = """\
import { Ticket } from "./shared.flow"
use agent "reviewr" as r
input Ticket
stage s -> text {
  return agent(r) { task "Title: ${input.title}" expect text }
}
"""
CONFIG = '[agents.reviewer]\nmodel = "test"\n'


def pos(text: str, needle: str) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle))
    return {"line": line, "character": char}


def write(path, text: str) -> None:
    """Write ``path`` so that its modification time differs from the last write's (a look at
    the file compares time and size)."""
    before = path.stat().st_mtime_ns if path.exists() else None
    path.write_text(text, encoding="utf-8")
    while before is not None and path.stat().st_mtime_ns == before:
        time.sleep(0.01)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def project(tmp_path):
    (tmp_path / "flow.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "shared.flow").write_text(SHARED, encoding="utf-8")
    (tmp_path / "main.flow").write_text(MAIN, encoding="utf-8")
    return tmp_path


def codes_of(c: LspClient, uri: str, want: list[str]) -> list[dict]:
    """The next diagnostics published for ``uri`` whose codes are exactly ``want``."""

    def wanted(p: dict) -> bool:
        return p["uri"] == uri and sorted(d["code"] for d in p["diagnostics"]) == sorted(want)

    return c.wait_notification("textDocument/publishDiagnostics", wanted, timeout=30)["diagnostics"]


def test_imported_files_and_flow_toml_changed_on_disk_check_the_importer_again(project):
    uri = (project / "main.flow").as_uri()
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0, "watch_interval_ms": 20})
    try:
        c.open(uri, MAIN)
        # flow.toml's profiles: the warning `flowc check` gives, at the same place
        [d] = codes_of(c, uri, ["unknown-agent-profile"])
        assert d["range"]["start"] == pos(MAIN, '"reviewr"')
        file = str(project / "main.flow")
        [expected] = agent_profile_warnings(file, check_source(MAIN, file))
        assert d["message"] == f"{expected.message}\nhint: {expected.hint}"
        # the imported file, not open, broken and mended on disk
        c.clear_notifications()
        write(project / "shared.flow", BROKEN)
        [d, _] = sorted(
            codes_of(c, uri, ["import-error", "unknown-agent-profile"]), key=lambda d: d["code"]
        )
        assert d["range"]["start"] == pos(MAIN, '"./shared.flow"')
        c.clear_notifications()
        write(project / "shared.flow", SHARED)
        codes_of(c, uri, ["unknown-agent-profile"])
        # flow.toml changed: the profile exists now
        c.clear_notifications()
        write(project / "flow.toml", CONFIG + '[agents.reviewr]\nmodel = "test"\n')
        codes_of(c, uri, [])
        # the imported file's own warning is shown on it when it is open, never on the importer
        shared_uri = (project / "shared.flow").as_uri()
        c.open(shared_uri, SHARED)
        [d] = codes_of(c, shared_uri, ["optional-union-member"])
        assert d["range"]["start"] == pos(SHARED, '"a" |')
    finally:
        c.close()


def test_a_client_that_watches_files_gets_a_registration_and_its_events_are_followed(project):
    uri = (project / "main.flow").as_uri()
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(
        options={"debounce_ms": 0, "watch_interval_ms": 0},  # the client's events alone
        workspace={"didChangeWatchedFiles": {"dynamicRegistration": True}},
    )
    try:
        c.open(uri, MAIN)
        codes_of(c, uri, ["unknown-agent-profile"])
        [reg] = [r for r in c.server_requests if r["method"] == "client/registerCapability"]
        [one] = reg["params"]["registrations"]
        assert one["method"] == "workspace/didChangeWatchedFiles"
        globs = [w["globPattern"] for w in one["registerOptions"]["watchers"]]
        assert globs == ["**/*.flow", "**/flow.toml"]
        write(project / "shared.flow", BROKEN)
        changes = [{"uri": (project / "shared.flow").as_uri(), "type": 2}]
        c.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        codes_of(c, uri, ["import-error", "unknown-agent-profile"])
        (project / "flow.toml").unlink()
        changes = [{"uri": (project / "flow.toml").as_uri(), "type": 3}]
        c.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        codes_of(c, uri, ["import-error"])
    finally:
        c.close()


def test_a_stale_generated_module_is_shown_in_the_editor_as_flowc_check_shows_it(tmp_path):
    """`[gen] python` of flow.toml: the module made from an earlier version of the flow is
    `stale-generated-module` in the editor as in `flowc check`; the module is watched like an
    imported file: generated again on disk, the warning goes without an edit of the flow."""
    from agentflow.api import gen_python, stale_modules

    flow = tmp_path / "main.flow"
    old = "input { title: text }\nstage s -> text { return input.title }\n"
    flow.write_text(old, encoding="utf-8")
    (tmp_path / "client.py").write_text(gen_python(flow, tmp_path / "client.py"), "utf-8")
    (tmp_path / "flow.toml").write_text('[gen]\npython = ["client.py"]\n', encoding="utf-8")
    new = old.replace("title: text", "title: text, body: text")
    flow.write_text(new, encoding="utf-8")
    [expected] = stale_modules(flow, new)
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0, "watch_interval_ms": 20})
    try:
        c.open(flow.as_uri(), new)
        [d] = codes_of(c, flow.as_uri(), ["stale-generated-module"])
        assert d["message"].startswith(expected.message)
        c.clear_notifications()
        write(tmp_path / "client.py", gen_python(flow, tmp_path / "client.py"))
        codes_of(c, flow.as_uri(), [])
    finally:
        c.close()


def test_a_flow_toml_that_does_not_load_is_shown_on_the_file_as_flowc_check_shows_it(tmp_path):
    """`invalid-config` (docs/diagnostics.md): the errors `flowc check` gives for the flow.toml
    a document's run reads are published on that flow.toml, at the same places; mended on
    disk, they are cleared."""
    from agentflow.api import config_diagnostics

    flow = tmp_path / "main.flow"
    flow.write_text(MAIN.replace('import { Ticket } from "./shared.flow"\n', ""), "utf-8")
    config = tmp_path / "flow.toml"
    bad = '[providers.p]\nkind = "openai"\nregion = "us-east-1"\n'
    config.write_text(bad, encoding="utf-8")
    [expected], _ = config_diagnostics(flow)
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0, "watch_interval_ms": 20})
    try:
        c.open(flow.as_uri(), flow.read_text("utf-8"))
        [d] = codes_of(c, config.as_uri(), ["invalid-config"])
        assert d["range"]["start"] == pos(bad, "region")
        assert d["message"] == f"{expected.message}\nhint: {expected.hint}"
        c.clear_notifications()
        write(config, bad.replace('region = "us-east-1"\n', ""))
        codes_of(c, config.as_uri(), [])
    finally:
        c.close()


def test_a_provider_kind_spelt_nearly_right_is_shown_on_flow_toml_with_its_did_you_mean(tmp_path):
    """The language server shows a wrong value of flow.toml as `flowc check` does: in the
    file's terms, at the key, the kind meant as the hint (docs/reference/configuration.md
    "Errors")."""
    flow = tmp_path / "main.flow"
    flow.write_text(MAIN.replace('import { Ticket } from "./shared.flow"\n', ""), "utf-8")
    config = tmp_path / "flow.toml"
    bad = '[providers.p]\nkind = "opnai"\ntimeout = "30s"\n'
    config.write_text(bad, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0, "watch_interval_ms": 20})
    try:
        c.open(flow.as_uri(), flow.read_text("utf-8"))
        kind, timeout = codes_of(c, config.as_uri(), ["invalid-config", "invalid-config"])
        assert kind["range"]["start"] == pos(bad, "kind")
        assert kind["message"] == (
            '[providers.p] kind: expected a provider kind; got the string "opnai"\n'
            "hint: did you mean `openai`?"
        )
        assert timeout["range"]["start"] == pos(bad, "timeout")
        assert timeout["message"].startswith(
            "[providers.p] timeout: expected a number of seconds (more than 0), e.g. "
            '`timeout = 120`; got the string "30s"\n'
        )
    finally:
        c.close()
