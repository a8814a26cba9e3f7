"""`flowc lsp`, driven as a real LSP client over stdio (``python -m agentflow lsp``, JSON-RPC with
Content-Length framing): diagnostics, hover, definition, completion, symbols, rename,
formatting, and UTF-16 / UTF-8 / UTF-32 positions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

SOURCE = """\
/// An incoming bug report.
type Report {
  /// a short summary
  title: text
  files: path[]
}

type Level = "low" | "high"

/// Look an issue up in the tracker.
extern tool tracker__lookup(id: text) -> { level: Level }

use agent "repo-investigator" as investigator
use team "dev-team" as dev

input Report

/// Finds the report again.
stage find -> Report {
  /// what the investigator found
  let found = agent(investigator) {
    task "look at ${input.title}"
    tools [read_file, grep]
    expect Report
  }
  return found
}

stage rank -> text {
  let hit = tracker__lookup(id: find.title)
  let size = read_file(path: find.files[0]).count
  require size > 0 else fail "empty"
  return hit.level
}

stage route -> Report {
  agent(dev.main) {
    task "route"
    expect Report
  }
}
"""

URI = "file:///tmp/agentflow-test/main.flow"


def pos(text: str, needle: str, delta: int = 0, nth: int = 0, encoding: str = "utf-16") -> dict:
    """The LSP position of ``needle`` (+ ``delta`` characters) in ``text``."""
    off = -1
    for _ in range(nth + 1):
        off = text.index(needle, off + 1)
    line, char = LineIndex(text, encoding).position(off + delta)
    return {"line": line, "character": char}


@pytest.fixture(scope="module")
def client():
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    caps = c.initialize()
    c.caps = caps["capabilities"]
    c.open(URI, SOURCE)
    first = c.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == URI)
    c.first_diagnostics = first
    try:
        yield c
    finally:
        c.close()


def hover(c: LspClient, uri: str, p: dict) -> str | None:
    r = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": p})
    return None if r is None else r["contents"]["value"]


def labels(c: LspClient, uri: str, p: dict) -> list[str]:
    r = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": p})
    items = r["items"] if isinstance(r, dict) else r
    return [i["label"] for i in items]


def test_capabilities(client):
    caps = client.caps
    assert caps["positionEncoding"] == "utf-16"
    assert caps["hoverProvider"] and caps["definitionProvider"]
    assert set(caps["completionProvider"]["triggerCharacters"]) >= {".", ":"}
    assert caps["renameProvider"]["prepareProvider"] is True
    assert caps["documentSymbolProvider"] and caps["documentFormattingProvider"]


def test_diagnostics_on_open_and_change(client):
    assert client.first_diagnostics["diagnostics"] == []
    uri = "file:///tmp/agentflow-test/diag.flow"
    client.open(uri, SOURCE)
    client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    bad = SOURCE.replace("hit.level", "hit.levle")
    client.change(uri, bad, 2)
    got = client.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == 2
    )
    [d] = got["diagnostics"]
    assert d["code"] == "unknown-field"
    assert d["severity"] == 1 and d["source"] == "flowc"
    assert "did you mean `level`" in d["message"]
    start = pos(bad, "levle")
    assert d["range"] == {
        "start": start,
        "end": {"line": start["line"], "character": start["character"] + 5},
    }
    # warnings carry severity 2; notes become related information
    dup = SOURCE + "\ntype Report { x: int }\n"
    client.change(uri, dup, 3)
    got = client.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == 3
    )
    [d] = got["diagnostics"]
    assert d["code"] == "duplicate-definition"
    assert d["relatedInformation"][0]["location"]["range"]["start"] == pos(dup, "Report")
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    closed = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    assert closed["diagnostics"] == []


def test_changes_are_debounced_to_the_latest_version(client):
    uri = "file:///tmp/agentflow-test/debounce.flow"
    client.open(uri, SOURCE)
    client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    for v in range(2, 12):
        client.change(uri, SOURCE.replace("return hit.level", f"return hit.level{v}"), v)
    last = client.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == 11
    )
    assert "level11" in last["diagnostics"][0]["message"]


def test_hover(client):
    h = hover(client, URI, pos(SOURCE, "found", 1, nth=1))  # `return found`
    assert "(let) found: Report" in h and "what the investigator found" in h
    h = hover(client, URI, pos(SOURCE, "find.title", 6))  # the field
    assert "(field) title: text" in h and "a short summary" in h
    h = hover(client, URI, pos(SOURCE, "find.title", 1))  # the stage
    assert "(stage) find: Report" in h and "Finds the report again." in h
    h = hover(client, URI, pos(SOURCE, "-> Report {", 4))  # a type name: definition + doc
    assert "type Report {" in h and "files: path[]" in h and "An incoming bug report." in h
    h = hover(client, URI, pos(SOURCE, "tracker__lookup(id"))
    assert "tracker__lookup(id: text) -> { level: Level }" in h
    assert "Look an issue up in the tracker." in h
    h = hover(client, URI, pos(SOURCE, "read_file(path"))
    assert "(prelude tool) read_file(path: path" in h
    h = hover(client, URI, pos(SOURCE, "size > 0", 5))  # the `>` of an expression
    assert "bool" in h
    h = hover(client, URI, pos(SOURCE, "investigator)"))
    assert "(use) investigator" in h


def _definition(client, p):
    return client.request("textDocument/definition", {"textDocument": {"uri": URI}, "position": p})


def test_definition(client):
    cases = {
        ("find.title", 0, 0): ("find ->", 0),  # stage
        ("found", 0, 1): ("found =", 0),  # let
        ("expect Report", 7, 0): ("Report {", 0),  # type
        ("investigator)", 0, 0): ("investigator\n", 0),  # agent alias
        ("dev.main", 0, 0): ("dev\n", 0),  # team alias
        ("tracker__lookup(id", 0, 0): ("tracker__lookup(id: text)", 0),  # file tool
        ("Level }", 0, 0): ("Level =", 0),  # alias type
        ("hit.level", 4, 0): ("level: Level", 0),  # field of an inline object type
        ("find.files", 5, 0): ("files: path[]", 0),  # field of a named type
    }
    for (needle, delta, nth), (target, tdelta) in cases.items():
        loc = _definition(client, pos(SOURCE, needle, delta, nth))
        assert loc is not None, needle
        assert loc["uri"] == URI
        assert loc["range"]["start"] == pos(SOURCE, target, tdelta), needle
    # a prelude tool goes to stdlib/prelude.flow
    loc = _definition(client, pos(SOURCE, "read_file(path"))
    assert loc["uri"].endswith("/stdlib/prelude.flow")
    prelude = Path(loc["uri"][len("file://") :]).read_text(encoding="utf-8")
    assert (
        prelude.splitlines()[loc["range"]["start"]["line"]].find("read_file")
        == (loc["range"]["start"]["character"])
    )
    # a tool named in `tools [...]`
    loc = _definition(client, pos(SOURCE, "grep]"))
    assert loc["uri"].endswith("/stdlib/prelude.flow")


def _edit(client, uri: str, text: str, version: int) -> None:
    client.change(uri, text, version)


def test_completion(client):
    uri = "file:///tmp/agentflow-test/complete.flow"
    client.open(uri, SOURCE)
    client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    # fields after `.` — also while the line does not parse yet
    text = SOURCE.replace("return hit.level", "return find.")
    _edit(client, uri, text, 2)
    got = labels(client, uri, pos(text, "find.\n", 5))
    assert got == ["title", "files"]
    text = SOURCE.replace("return hit.level", "return hit.le")
    _edit(client, uri, text, 3)
    assert labels(client, uri, pos(text, "hit.le", 6)) == ["level"]
    text = SOURCE.replace("return hit.level", "return find.files.")
    _edit(client, uri, text, 4)
    assert labels(client, uri, pos(text, "files.\n", 6)) == ["count"]
    # types after `:` and `expect`
    text = SOURCE.replace("  files: path[]\n", "  files: path[]\n  extra: \n")
    _edit(client, uri, text, 5)
    got = labels(client, uri, pos(text, "extra: ", 7))
    assert {"text", "int", "path", "Report", "Level"} <= set(got)
    assert "find" not in got
    text = SOURCE.replace("expect Report\n  }\n  return", "expect \n  }\n  return")
    _edit(client, uri, text, 6)
    got = labels(client, uri, pos(text, "expect \n", 7))
    assert {"Report", "Level", "bool", "json"} <= set(got)
    # tool names in `tools [...]`
    text = SOURCE.replace("tools [read_file, grep]", "tools [read_file, ]")
    _edit(client, uri, text, 7)
    got = labels(client, uri, pos(text, "read_file, ]", 11))
    assert {"read_file", "grep", "list_dir", "write_file", "tracker__lookup"} <= set(got)
    assert "Report" not in got
    # clause keywords inside `agent { }`
    text = SOURCE.replace('    task "route"\n', '    task "route"\n    ti\n')
    _edit(client, uri, text, 8)
    got = labels(client, uri, pos(text, "    ti\n", 6))
    assert {"task", "tools", "timeout", "retry", "max_iterations", "write", "expect"} <= set(got)
    # names in an expression
    text = SOURCE.replace("  return hit.level", "  return hit.level\n  let z = ")
    _edit(client, uri, text, 9)
    got = labels(client, uri, pos(text, "let z = ", 8))
    assert {"input", "find", "hit", "size", "investigator"} <= set(got)
    assert "route" not in got  # later stages are not visible


def test_document_symbols(client):
    syms = client.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
    by_name = {s["name"]: s for s in syms}
    assert by_name["Report"]["kind"] == 23  # Struct
    assert [c["name"] for c in by_name["Report"]["children"]] == ["title", "files"]
    assert by_name["find"]["kind"] == 12  # Function
    assert by_name["find"]["detail"] == "Report"
    assert by_name["rank"]["selectionRange"]["start"] == pos(SOURCE, "rank ->")
    assert {"Level", "tracker__lookup", "investigator", "dev", "route"} <= set(by_name)


def _rename(client, uri, p, new):
    return client.request(
        "textDocument/rename", {"textDocument": {"uri": uri}, "position": p, "newName": new}
    )


def _apply(text: str, edits: list[dict]) -> str:
    index = LineIndex(text)
    spans = sorted(
        (
            index.offset(e["range"]["start"]["line"], e["range"]["start"]["character"]),
            index.offset(e["range"]["end"]["line"], e["range"]["end"]["character"]),
            e["newText"],
        )
        for e in edits
    )
    for a, b, new in reversed(spans):
        text = text[:a] + new + text[b:]
    return text


def test_rename_let_and_type(client):
    prep = client.request(
        "textDocument/prepareRename",
        {"textDocument": {"uri": URI}, "position": pos(SOURCE, "hit.level", 1)},
    )
    assert prep["placeholder"] == "hit"
    edit = _rename(client, URI, pos(SOURCE, "hit.level", 1), "lookup")
    out = _apply(SOURCE, edit["changes"][URI])
    assert "let lookup = tracker__lookup" in out and "return lookup.level" in out
    edit = _rename(client, URI, pos(SOURCE, "Report {"), "BugReport")
    out = _apply(SOURCE, edit["changes"][URI])
    assert "Report" not in out.replace("BugReport", "")
    assert out.count("BugReport") == SOURCE.count("Report") - SOURCE.count("reports again") * 0
    # stages and built-ins are not renamable; bad names are refused
    assert (
        client.request(
            "textDocument/prepareRename",
            {"textDocument": {"uri": URI}, "position": pos(SOURCE, "find.title")},
        )
        is None
    )
    with pytest.raises(LspError):
        _rename(client, URI, pos(SOURCE, "hit.level", 1), "not a name")
    with pytest.raises(LspError):
        _rename(client, URI, pos(SOURCE, "hit.level", 1), "stage")


CAPTURE = """\
stage s -> int { return 5 }
use agent "helper" as inv
stage t -> int[] {
  let abc = 1
  let y = 2
  let out = map [1, 2] as it {
    let q = it + abc
    q + index
  }
  if abc > y {
    let zz = 3
    return [zz + abc + s]
  }
  return out
}
"""


def test_rename_refuses_name_capture(client):
    """Regression (adversarial round 2, P2 #3): a rename that would make a reference resolve
    to another binding (or another reference resolve to the renamed one) is refused."""
    uri = "file:///tmp/agentflow-test/capture.flow"
    client.open(uri, CAPTURE)
    at_abc = pos(CAPTURE, "abc = 1")
    refused = {
        "s": "stage",  # a stage used in the same scope (`return abc + s` → `s + s`)
        "inv": "`use`",
        "y": "in scope",  # another let of the same block
        "zz": "in scope",  # a let visible at a reference inside the `if`
        "it": "in scope",  # a loop variable visible at a reference
        "index": "in scope",  # the implicit loop index
        "input": "keyword",
        "let": "keyword",
        "1abc": "not a valid name",
    }
    for new, why in refused.items():
        with pytest.raises(LspError) as exc:
            _rename(client, uri, at_abc, new)
        assert exc.value.code == -32602 and why in str(exc.value), (new, str(exc.value))
    # renaming a loop variable to an outer let used in the body, or to `index`
    for new in ("abc", "index"):
        with pytest.raises(LspError, match="in scope"):
            _rename(client, uri, pos(CAPTURE, "it {"), new)
    # a type cannot take the name of another type
    with pytest.raises(LspError, match="already exists"):
        _rename(client, URI, pos(SOURCE, "Report {"), "Level")
    # a fresh name is still fine, and the renamed program resolves the same way
    edit = _rename(client, uri, at_abc, "base")
    out = _apply(CAPTURE, edit["changes"][uri])
    assert out.count("base") == CAPTURE.count("abc") and "abc" not in out
    edit = _rename(client, uri, pos(CAPTURE, "it {"), "item")
    assert "let q = item + abc" in _apply(CAPTURE, edit["changes"][uri])


def test_rename_resolution_check_catches_capture():
    """The last line of defence: re-checking the edited text finds a capture by comparing
    name resolution (the finding's example: `abc` → `s`)."""
    from agentflow.compiler.fmt import KEYWORDS
    from agentflow.lsp.analysis import analyze

    src = "stage s -> int { return 5 }\nstage t -> int {\n  let abc = 1\n  return abc + s\n}\n"
    a = analyze(src, "cap.flow")
    off = src.index("abc = 1")
    spans = a.references_for_rename(off)
    assert a._semantic_change("let", "abc", "s", spans) is not None
    assert a._semantic_change("let", "abc", "fresh", spans) is None
    assert "stage" in a.rename_problem(off, "s", KEYWORDS)


def test_malformed_requests_always_get_a_reply(tmp_path):
    """Regression (adversarial round 2, P2 #6): every request gets a response — malformed
    params give -32602, unknown documents give null/[] without reading the file from disk,
    and neither those nor refused renames put a traceback on stderr."""
    err = (tmp_path / "stderr.log").open("wb")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"], stderr=err)
    try:
        c.initialize()
        uri = "file:///tmp/agentflow-test/malformed.flow"
        c.open(uri, CAPTURE)
        td = {"uri": uri}
        methods = [
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/completion",
            "textDocument/prepareRename",
        ]
        bad_positions = [
            {"line": -1, "character": -5},
            {"line": 2**31, "character": 2**31},
            {"line": 0.5, "character": "a"},
        ]
        for p in bad_positions:
            for m in methods:
                with pytest.raises(LspError) as exc:
                    c.request(m, {"textDocument": td, "position": p}, timeout=5)
                assert exc.value.code == -32602, (m, p)
            with pytest.raises(LspError) as exc:
                c.request(
                    "textDocument/rename",
                    {"textDocument": td, "position": p, "newName": "x"},
                    timeout=5,
                )
            assert exc.value.code == -32602
        for params in (None, {"textDocument": 5}, [1, 2]):
            with pytest.raises(LspError) as exc:
                c.request("textDocument/hover", params, timeout=5)
            assert exc.value.code == -32602
        # a malformed notification is dropped, the server keeps answering
        c.notify("textDocument/didChange", {"textDocument": 5})
        # documents never opened: null / [] and no disk read, even when the file exists
        on_disk = tmp_path / "real.flow"
        on_disk.write_text("stage s -> int { return 1 }\n", encoding="utf-8")
        for u in (on_disk.as_uri(), "file:///etc/passwd", "file:///nonexistent.flow", ""):
            assert c.request("textDocument/documentSymbol", {"textDocument": {"uri": u}}) == []
            p0 = {"line": 0, "character": 0}
            for m in methods:
                assert c.request(m, {"textDocument": {"uri": u}, "position": p0}) is None
            fmt = {"textDocument": {"uri": u}, "options": {"tabSize": 2, "insertSpaces": True}}
            assert c.request("textDocument/formatting", fmt) is None
        # refused renames answer with a message and log nothing
        for _ in range(3):
            with pytest.raises(LspError, match="cannot rename"):
                _rename(c, uri, pos(CAPTURE, "abc = 1"), "s")
        assert c.request(
            "textDocument/hover", {"textDocument": td, "position": pos(CAPTURE, "abc")}
        )
    finally:
        c.close()
        err.close()
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log


def test_hover_of_a_huge_literal_is_bounded(client):
    uri = "file:///tmp/agentflow-test/huge.flow"
    text = 'stage s -> text { return "' + "a" * 200_000 + '" }\n'
    client.open(uri, text)
    r = client.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": pos(text, "aaaa")}
    )
    assert r is not None and len(r["contents"]["value"]) < 1000


def test_formatting(client):
    uri = "file:///tmp/agentflow-test/fmt.flow"
    messy = "stage s->int{\nreturn 1+2\n}\n"
    client.open(uri, messy)
    edits = client.request(
        "textDocument/formatting",
        {"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": True}},
    )
    assert _apply(messy, edits) == "stage s -> int {\n  return 1 + 2\n}\n"


EMOJI = """\
stage s -> text {
  let name = "x"
  return "😀😀" + name + nope
}
"""


def test_utf16_positions_after_non_bmp(client):
    uri = "file:///tmp/agentflow-test/emoji.flow"
    client.open(uri, EMOJI)
    got = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    [d] = got["diagnostics"]
    assert d["code"] == "unknown-name"
    line = EMOJI.splitlines()[2]
    col16 = len(line[: line.index("nope")].encode("utf-16-le")) // 2
    assert col16 == line.index("nope") + 2  # two surrogate pairs before it
    assert d["range"]["start"] == {"line": 2, "character": col16}
    assert d["range"]["end"] == {"line": 2, "character": col16 + 4}
    # hover / definition at a UTF-16 position after the emoji
    p = {"line": 2, "character": len(line[: line.index("name")].encode("utf-16-le")) // 2 + 1}
    h = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": p})
    assert "(let) name: text" in h["contents"]["value"]
    assert h["range"]["start"]["character"] == p["character"] - 1
    loc = client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": p})
    assert loc["range"]["start"] == {"line": 1, "character": 6}


@pytest.mark.parametrize("encoding,width", [("utf-8", 4), ("utf-32", 1)])
def test_other_position_encodings(encoding, width):
    with LspClient() as c:
        caps = c.initialize(encodings=[encoding])
        assert caps["capabilities"]["positionEncoding"] == encoding
        uri = "file:///tmp/agentflow-test/enc.flow"
        c.open(uri, EMOJI)
        got = c.wait_notification("textDocument/publishDiagnostics")
        line = EMOJI.splitlines()[2]
        before = line[: line.index("nope")]
        expect = len(before) - 2 + 2 * width
        assert got["diagnostics"][0]["range"]["start"] == {"line": 2, "character": expect}


# ---------------------------------------------------------------------------------------------
# the incremental parser behind the server's diagnostics answers exactly what parse_module does


def _key(n):
    from agentflow.grammar import ast

    if isinstance(n, ast.Node):
        return (type(n).__name__,) + tuple(
            (f, _key(getattr(n, f))) for f in type(n).__dataclass_fields__
        )
    if isinstance(n, (list, tuple)):
        return tuple(_key(x) for x in n)
    if isinstance(n, ast.Span):
        return (n.line, n.column, n.end_line, n.end_column, n.start, n.end)
    return n


def _dkey(ds):
    return [
        (d.code, d.message, _key(d.span), d.hint, [(x.message, _key(x.span)) for x in d.notes])
        for d in ds
    ]


def test_incremental_parse_equals_full_parse():
    import random

    from agentflow.grammar.parser import parse_module
    from agentflow.lsp.incremental import IncrementalParser

    root = Path(__file__).resolve().parent
    files = sorted(root.rglob("*.flow")) + sorted(Path("/work/shared/examples").rglob("*.flow"))
    pieces = ["{", "}", "(", ")", '"', "stage ", "type ", "\n", "x", ".", "let y = ", "// c", " "]
    modes: dict[str, int] = {}
    for f in files:
        text = f.read_text(encoding="utf-8")
        parser = IncrementalParser(str(f))
        rnd = random.Random(f.name)
        for _ in range(12):
            m1, d1 = parser.parse(text)
            m2, d2 = parse_module(text, str(f))
            modes[parser.last_mode] = modes.get(parser.last_mode, 0) + 1
            assert _key(m1) == _key(m2), f
            assert _dkey(d1) == _dkey(d2), f
            i = rnd.randrange(len(text) + 1)
            if rnd.random() < 0.6:
                text = text[:i] + rnd.choice(pieces) + text[i:]
            else:
                text = text[:i] + text[i + rnd.randrange(1, 4) :]
    assert modes.get("incremental", 0) > 20


def test_incremental_parse_reuses_unchanged_items():
    from agentflow.lsp.incremental import IncrementalParser

    parser = IncrementalParser("x.flow")
    parser.parse(SOURCE)
    parser.parse(SOURCE.replace("return hit.level", "return hit.level + 1"))
    assert parser.last_mode == "incremental" and parser.reparsed == 1
    # a syntax error in one stage: still one chunk (plus its neighbour) parsed
    parser.parse(SOURCE.replace("return hit.level", "return hit.level +"))
    assert parser.last_mode == "incremental"


def test_vscode_extension_files():
    import json
    import re

    base = Path(__file__).resolve().parent.parent / "editors" / "vscode"
    pkg = json.loads((base / "package.json").read_text())
    assert pkg["contributes"]["languages"][0]["extensions"] == [".flow"]
    assert (base / "src" / "extension.js").read_text().count('args: ["lsp"]') == 1
    grammar = json.loads((base / "syntaxes" / "flow.tmLanguage.json").read_text())
    assert grammar["scopeName"] == "source.flow"
    patterns: list[str] = []

    def collect(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("match", "begin", "end") and isinstance(v, str):
                    patterns.append(v)
                else:
                    collect(v)
        elif isinstance(node, list):
            for x in node:
                collect(x)

    collect(grammar)
    assert len(patterns) > 20
    for p in patterns:
        re.compile(p)  # the patterns use only syntax Oniguruma and Python share
    kw = next(p for p in patterns if "require" in p)
    assert re.search(kw, "  require x else fail") and not re.search(kw, "input.require")
