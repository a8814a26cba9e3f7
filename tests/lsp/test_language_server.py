"""`flowc lsp`, driven as a real LSP client over stdio (``python -m agentflow lsp``, JSON-RPC with
Content-Length framing): diagnostics, hover, definition, completion, symbols, rename,
formatting, and UTF-16 / UTF-8 / UTF-32 positions."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from support.paths import REPO, TESTS

from agentflow.core.spans import Span
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


def doc_uri(name: str) -> str:
    """A `file:` URI for an editor buffer `name`: inside the repository, never on disk (the server
    only checks the text it is sent)."""
    return (TESTS / "lsp" / "buffers" / name).as_uri()


URI = doc_uri("main.flow")


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
    uri = doc_uri("diag.flow")
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


def test_a_deleted_brace_is_shown_where_it_is_missing_with_the_open_brace_related(client):
    """A stage whose agent block lost its `}`: the squiggle is on the `}` that (by its
    indentation) closes the stage, and the unclosed `{` of the agent block is related
    information, as `flowc check` notes it."""
    uri = doc_uri("deleted-brace.flow")
    text = (
        'use agent "helper" as helper\n'
        "stage s -> int {\n"
        "  return agent(helper) {\n"
        '    task "x"\n'
        "    expect int\n"
        "\n"
        "}\n"
    )
    client.open(uri, text)
    got = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    [d] = got["diagnostics"]
    assert d["code"] == "syntax-error"
    assert d["message"].startswith(
        "expected `}` to close the agent block opened on line 3 before line 7\nhint: "
    )
    assert d["range"]["start"] == {"line": 6, "character": 0}
    [related] = d["relatedInformation"]
    assert related["message"] == "this `{` is not closed"
    assert related["location"]["uri"] == uri
    assert related["location"]["range"]["start"] == pos(text, "{", nth=1)
    # the quick fix puts the `}` before that line, indented like the agent block's line
    [a] = _actions(client, uri, d["range"], [d])
    assert a["title"] == "Insert `}` to close the agent block" and "isPreferred" not in a
    fixed = _apply(text, a["edit"]["changes"][uri])
    assert fixed == text.replace("\n\n}\n", "\n\n  }\n}\n")
    assert _codes(fixed) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_a_field_without_its_colon_is_fixed_by_inserting_it(client):
    uri = doc_uri("field-colon.flow")
    text = 'type R {\n  title: text\n  count int\n}\nstage s -> R {\n  return { title: "t", count: 1 }\n}\n'
    client.open(uri, text)
    got = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    [d] = got["diagnostics"]
    assert d["message"].endswith("hint: fields are written `name: type`: `count: int`")
    [a] = _actions(client, uri, d["range"], [d])
    assert a["title"] == "Insert `:` after `count`" and a["isPreferred"] is True
    fixed = _apply(text, a["edit"]["changes"][uri])
    assert "  count: int\n" in fixed and _codes(fixed) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_changes_are_debounced_to_the_latest_version(client):
    uri = doc_uri("debounce.flow")
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
    uri = doc_uri("complete.flow")
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
    # (the clauses the block has, `task` and `expect`, are not offered again: issue 36)
    assert {"tools", "timeout", "retry", "max_iterations", "write"} <= set(got)
    assert "task" not in got and "expect" not in got
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
    # built-in types, `input` and tools are not renamable; bad names are refused
    for needle in ("text\n", "input.title", "read_file(path"):
        assert (
            client.request(
                "textDocument/prepareRename",
                {"textDocument": {"uri": URI}, "position": pos(SOURCE, needle)},
            )
            is None
        ), needle
    with pytest.raises(LspError):
        _rename(client, URI, pos(SOURCE, "hit.level", 1), "not a name")
    with pytest.raises(LspError):
        _rename(client, URI, pos(SOURCE, "hit.level", 1), "else")


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
    """A rename that would make a reference resolve to another binding (or another reference
    resolve to the renamed one) is refused."""
    uri = doc_uri("capture.flow")
    client.open(uri, CAPTURE)
    at_abc = pos(CAPTURE, "abc = 1")
    refused = {
        "s": "stage",  # a stage used in the same scope (`return abc + s` → `s + s`)
        "inv": "`use`",
        "y": "in scope",  # another let of the same block
        "zz": "in scope",  # a let visible at a reference inside the `if`
        "it": "in scope",  # a loop variable visible at a reference
        "index": "in scope",  # the implicit loop index
        "input": "the flow's input",
        "let": "reserved word",
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
    name resolution (`abc` → `s` here)."""
    from agentflow.lsp.analysis import analyze

    src = "stage s -> int { return 5 }\nstage t -> int {\n  let abc = 1\n  return abc + s\n}\n"
    a = analyze(src, "cap.flow")
    off = src.index("abc = 1")
    spans = a.references_for_rename(off)
    assert a._semantic_change("let", "abc", "s", spans) is not None
    assert a._semantic_change("let", "abc", "fresh", spans) is None
    assert "stage" in a.rename_problem(off, "s")


def test_malformed_requests_always_get_a_reply(tmp_path):
    """Every request gets a response — malformed params give -32602, unknown documents give
    null/[] without reading the file from disk, and neither those nor refused renames put a
    traceback on stderr."""
    err = (tmp_path / "stderr.log").open("wb")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"], stderr=err)
    try:
        c.initialize()
        uri = doc_uri("malformed.flow")
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
            ref = {
                "textDocument": {"uri": u},
                "position": p0,
                "context": {"includeDeclaration": True},
            }
            assert c.request("textDocument/references", ref) is None
            rng = {"start": p0, "end": p0}
            act = {"textDocument": {"uri": u}, "range": rng, "context": {"diagnostics": []}}
            assert c.request("textDocument/codeAction", act) is None
        for p in bad_positions:
            with pytest.raises(LspError) as exc:
                c.request(
                    "textDocument/references",
                    {"textDocument": td, "position": p, "context": {"includeDeclaration": True}},
                    timeout=5,
                )
            assert exc.value.code == -32602
            with pytest.raises(LspError) as exc:
                c.request(
                    "textDocument/codeAction",
                    {"textDocument": td, "range": {"start": p, "end": p}, "context": {}},
                    timeout=5,
                )
            assert exc.value.code == -32602
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
    uri = doc_uri("huge.flow")
    text = 'stage s -> text { return "' + "a" * 200_000 + '" }\n'
    client.open(uri, text)
    r = client.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": pos(text, "aaaa")}
    )
    assert r is not None and len(r["contents"]["value"]) < 1000


def test_formatting(client):
    uri = doc_uri("fmt.flow")
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
    uri = doc_uri("emoji.flow")
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
        uri = doc_uri("enc.flow")
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

    return _node_key(n, ast.Node)


def _node_key(n, node_type):
    """``n`` as nested tuples of its fields (``_key``; the import is done once, not per node)."""
    if isinstance(n, node_type):
        return (type(n).__name__,) + tuple(
            (f, _node_key(getattr(n, f), node_type)) for f in type(n).__dataclass_fields__
        )
    if isinstance(n, (list, tuple)):
        return tuple(_node_key(x, node_type) for x in n)
    if isinstance(n, Span):
        return (n.line, n.column, n.end_line, n.end_column, n.start, n.end)
    return n


def _dkey(ds):
    return [
        (d.code, d.message, _key(d.span), d.hint, [(x.message, _key(x.span)) for x in d.notes])
        for d in ds
    ]


@pytest.mark.battery  # README.md "The battery tier"
def test_incremental_parse_equals_full_parse():
    import random

    from agentflow.grammar.parser import parse_module
    from agentflow.lsp.incremental import IncrementalParser

    files = sorted(TESTS.rglob("*.flow"))  # golden cases and the spec examples
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

    base = REPO / "editors" / "vscode"
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


# ---------------------------------------------------------------------------------------------
# references, quick fixes, rename of stages and `use` aliases


def _refs(c: LspClient, uri: str, text: str, p: dict, include: bool = True) -> list | None:
    """``textDocument/references`` as ``(line, text under the range)`` pairs (``("prelude",
    text)`` for a location in stdlib/prelude.flow)."""
    locs = c.request(
        "textDocument/references",
        {"textDocument": {"uri": uri}, "position": p, "context": {"includeDeclaration": include}},
    )
    if locs is None:
        return None
    out = []
    for loc in locs:
        r = loc["range"]
        if loc["uri"] == uri:
            src, where = text, r["start"]["line"]
        else:
            assert loc["uri"].endswith("/stdlib/prelude.flow")
            src, where = Path(loc["uri"][len("file://") :]).read_text(encoding="utf-8"), "prelude"
        index = LineIndex(src)
        a = index.offset(r["start"]["line"], r["start"]["character"])
        b = index.offset(r["end"]["line"], r["end"]["character"])
        out.append((where, src[a:b]))
    return out


def _line(text: str, needle: str, nth: int = 0) -> int:
    return pos(text, needle, nth=nth)["line"]


def test_references_of_every_name_kind(client):
    S = SOURCE
    # a let: from a use and from its declaration; includeDeclaration honoured
    at_use = pos(S, "found", 1, nth=1)
    assert _refs(client, URI, S, at_use) == [
        (_line(S, "let found"), "found"),
        (_line(S, "return found"), "found"),
    ]
    assert _refs(client, URI, S, at_use, include=False) == [(_line(S, "return found"), "found")]
    assert _refs(client, URI, S, pos(S, "found =")) == _refs(client, URI, S, at_use)
    # a stage
    got = _refs(client, URI, S, pos(S, "find.title"))
    assert got == [
        (_line(S, "stage find"), "find"),
        (_line(S, "find.title"), "find"),
        (_line(S, "find.files"), "find"),
    ]
    assert _refs(client, URI, S, pos(S, "find ->"), include=False) == got[1:]
    # a declared type: every written use plus the declaration
    got = _refs(client, URI, S, pos(S, "expect Report", 7))
    assert [t for _, t in got] == ["Report"] * S.count("Report")
    assert len(_refs(client, URI, S, pos(S, "Report {"), include=False)) == S.count("Report") - 1
    # a built-in type: its uses (no declaration)
    got = _refs(client, URI, S, pos(S, "title: text", 7))
    assert [t for _, t in got] == ["text"] * 3  # title: text, id: text, -> text
    # a field: declaration, `input.title` inside an interpolation and `find.title`
    assert _refs(client, URI, S, pos(S, "find.title", 5)) == [
        (_line(S, "title: text"), "title"),
        (_line(S, "${input.title}"), "title"),
        (_line(S, "find.title"), "title"),
    ]
    assert _refs(client, URI, S, pos(S, "title: text"), include=False) == [
        (_line(S, "${input.title}"), "title"),
        (_line(S, "find.title"), "title"),
    ]
    # a field of an inline object type
    assert _refs(client, URI, S, pos(S, "hit.level", 4)) == [
        (_line(S, "level: Level"), "level"),
        (_line(S, "hit.level"), "level"),
    ]
    # a tool declared with `extern tool`, and one of its parameters
    assert _refs(client, URI, S, pos(S, "tracker__lookup(id:")) == [
        (_line(S, "extern tool"), "tracker__lookup"),
        (_line(S, "let hit"), "tracker__lookup"),
    ]
    assert _refs(client, URI, S, pos(S, "id: find")) == [
        (_line(S, "extern tool"), "id"),
        (_line(S, "let hit"), "id"),
    ]
    # a prelude tool: the call and the `tools [...]` entry, and its declaration in the prelude
    got = _refs(client, URI, S, pos(S, "read_file(path"))
    assert got == [
        ("prelude", "read_file"),
        (_line(S, "tools [read_file"), "read_file"),
        (_line(S, "read_file(path"), "read_file"),
    ] or got == [
        (_line(S, "tools [read_file"), "read_file"),
        (_line(S, "read_file(path"), "read_file"),
        ("prelude", "read_file"),
    ]
    assert ("prelude", "read_file") not in _refs(
        client, URI, S, pos(S, "read_file, grep"), include=False
    )
    # `use` aliases: agent target and team member access
    assert _refs(client, URI, S, pos(S, "investigator)")) == [
        (_line(S, "as investigator"), "investigator"),
        (_line(S, "agent(investigator)"), "investigator"),
    ]
    assert _refs(client, URI, S, pos(S, "dev\n")) == [
        (_line(S, "as dev"), "dev"),
        (_line(S, "dev.main"), "dev"),
    ]
    # `input`: the keyword of the `input` item and every use
    assert _refs(client, URI, S, pos(S, "input.title")) == [
        (_line(S, "input Report"), "input"),
        (_line(S, "input.title"), "input"),
    ]
    # nothing to find on a keyword or a string
    assert _refs(client, URI, S, pos(S, "stage rank")) is None
    assert _refs(client, URI, S, pos(S, '"route"', 2)) is None


def test_references_of_locals_and_loop_variables(client):
    uri = doc_uri("refs-capture.flow")
    client.open(uri, CAPTURE)
    C = CAPTURE
    assert [t for _, t in _refs(client, uri, C, pos(C, "abc = 1"))] == ["abc"] * C.count("abc")
    assert _refs(client, uri, C, pos(C, "it + abc")) == [
        (_line(C, "as it"), "it"),
        (_line(C, "it + abc"), "it"),
    ]
    # the implicit `index` has no declaration token
    assert _refs(client, uri, C, pos(C, "index")) == [(_line(C, "q + index"), "index")]
    # a shadowing `let` in another block is a different binding
    shadow = "stage s -> int {\n  let x = 1\n  if x > 0 {\n    let x = 2\n    return x\n  }\n  return x\n}\n"
    uri2 = doc_uri("refs-shadow.flow")
    client.open(uri2, shadow)
    assert _refs(client, uri2, shadow, pos(shadow, "x", nth=3)) == [(3, "x"), (4, "x")]
    assert _refs(client, uri2, shadow, pos(shadow, "x", nth=0)) == [(1, "x"), (2, "x"), (6, "x")]


def test_references_utf16_after_non_bmp(client):
    uri = doc_uri("refs-emoji.flow")
    text = 'stage s -> text {\n  let name = "😀"\n  return "😀😀" + name + name\n}\n'
    client.open(uri, text)
    line = text.splitlines()[2]
    u16 = [
        len(line[:i].encode("utf-16-le")) // 2 for i in (line.index("name"), line.rindex("name"))
    ]
    locs = client.request(
        "textDocument/references",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 2, "character": u16[1] + 1},
            "context": {"includeDeclaration": False},
        },
    )
    assert [(loc["range"]["start"], loc["range"]["end"]) for loc in locs] == [
        ({"line": 2, "character": c}, {"line": 2, "character": c + 4}) for c in u16
    ]


def test_parameter_hover_and_definition(client):
    h = hover(client, URI, pos(SOURCE, "id: find"))
    assert "(parameter of tracker__lookup) id: text" in h
    loc = _definition(client, pos(SOURCE, "id: find"))
    assert loc["range"]["start"] == pos(SOURCE, "id: text")
    loc = _definition(client, pos(SOURCE, "path: find"))
    assert loc["uri"].endswith("/stdlib/prelude.flow")


MISTAKES = """\
flow fixes
type Report {
  title: text @lenght(1, 80)
  url: text @format("ur")
}
extern tool tracker__lookup(id: text) -> { level: text }
use agent "repo" as investigator
use team "dev" as dev
input Report
stage find -> Report {
  let found = agent(investigatr) {
    task "look at ${input.titel} 😀"
    tools [read_fil, grep]
    expect Reprt
    retry { attempts: 1, on: [transiet] }
  }
  return fond
}
stage two -> text {
  let unused = 3
  let r: Report = { "titel": "x", url: "y" }
  let z = tracker__lookup(ib: "x")
  let w = agent(helper) { task "t" expect text tools [ ] }
  return w + find.titel + z.level + r.url + dev.mian
}
"""

#: every code that carries a "did you mean" hint in MISTAKES
DID_YOU_MEAN = {
    "invalid-constraint",  # @lenght → @length
    "invalid-value",  # @format("ur") → "uri"
    "unknown-name",  # investigatr, fond
    "unknown-field",  # titel, dev.mian
    "unknown-tool",  # read_fil in `tools [...]`
    "unknown-type",  # Reprt
    "unknown-error-code",  # transiet
    "type-mismatch",  # the key "titel" of an object literal (a note's span)
    "unknown-argument",  # ib
}


def _actions(c, uri, rng, diags, only=None):
    ctx: dict = {"diagnostics": diags}
    if only is not None:
        ctx["only"] = only
    return c.request(
        "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": ctx}
    )


def _codes(text: str) -> list[str]:
    from agentflow.compiler.api import check_source

    return [d.code for d in check_source(text, "x.flow").diagnostics]


def test_quick_fixes_for_every_hint(client):
    from agentflow.compiler.api import check_source

    uri = doc_uri("fixes.flow")
    client.open(uri, MISTAKES)
    diags = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    diags = diags["diagnostics"]
    assert client.caps["codeActionProvider"]["codeActionKinds"] == ["quickfix"]
    assert client.caps["referencesProvider"]
    seen: set[str] = set()
    for d in diags:
        d = {**d, "data": {"token": [1, "two"]}}  # whatever `data` the client keeps round-trips
        acts = _actions(client, uri, d["range"], [d])
        mine = [a for a in acts if a["diagnostics"] == [d]]
        if "did you mean" not in d["message"]:
            continue
        first_line, hint = d["message"].split("\nhint: ")
        wrong = re.findall(r"`([^`]*)`", first_line)[-1].lstrip("@")
        right = re.fullmatch(r"did you mean `(.*)`\?", hint).group(1)
        [a] = mine
        assert a["kind"] == "quickfix" and a["isPreferred"] is True, a
        assert a["title"] == f"Change `{wrong}` to `{right}`"
        [edit] = a["edit"]["changes"][uri]
        index = LineIndex(MISTAKES)
        start = index.offset(edit["range"]["start"]["line"], edit["range"]["start"]["character"])
        end = index.offset(edit["range"]["end"]["line"], edit["range"]["end"]["character"])
        # exactly the misspelt name is replaced (the quotes of `"ur"`/`"titel"`, `@` kept)
        assert MISTAKES[start:end] == wrong and edit["newText"] == right
        out = _apply(MISTAKES, [edit])
        key = (d["code"], first_line)
        before = [(x.code, x.message) for x in check_source(MISTAKES, "x.flow").diagnostics]
        after = [(x.code, x.message) for x in check_source(out, "x.flow").diagnostics]
        assert after.count(key) == before.count(key) - 1, (key, after)
        seen.add(d["code"])
    assert seen == set(DID_YOU_MEAN)

    def only_fix(needle: str, delta: int = 0) -> tuple[dict, str]:
        p = pos(MISTAKES, needle, delta)
        acts = _actions(client, uri, {"start": p, "end": p}, [])
        acts = [a for a in acts if a["diagnostics"][0]["range"]["start"]["line"] == p["line"]]
        assert len(acts) == 1, acts
        return acts[0], _apply(MISTAKES, acts[0]["edit"]["changes"][uri])

    # `tools [ ]` → `tools none` (preferred)
    act, out = only_fix("tools [ ]", 2)
    assert act["isPreferred"] and "tools none }" in out and "empty-tools" not in _codes(out)
    # an unused `let` → `_unused` (not preferred: the hint also offers removing it)
    act, out = only_fix("unused = 3", 2)
    assert "isPreferred" not in act and "let _unused = 3" in out
    assert _codes(out).count("unused-variable") == _codes(MISTAKES).count("unused-variable") - 1
    # an undeclared agent → its `use` line after the last `use`
    act, out = only_fix("helper)", 1)
    assert 'use team "dev" as dev\nuse agent "helper" as helper\n' in out
    assert "unknown-name" not in [
        d.code for d in check_source(out, "x.flow").diagnostics if "helper" in d.message
    ]
    # a cursor on no diagnostic, or only non-quickfix kinds asked: nothing
    p = pos(MISTAKES, "stage find")
    assert _actions(client, uri, {"start": p, "end": p}, []) == []
    d0 = diags[0]
    assert _actions(client, uri, d0["range"], [d0], only=["refactor"]) == []
    assert _actions(client, uri, d0["range"], [d0], only=["quickfix"]) != []


def test_quick_fix_is_computed_from_the_current_text(client):
    """A stale diagnostic (sent back after an edit moved the mistake) never yields a stale
    edit: fixes come from the analysis of the current text, in UTF-16 positions."""
    uri = doc_uri("fixes-stale.flow")
    text = 'stage s -> text {\n  let name = "x"\n  return "😀😀" + nmae\n}\n'
    client.open(uri, text)
    [d] = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)[
        "diagnostics"
    ]
    line = text.splitlines()[2]
    col16 = len(line[: line.index("nmae")].encode("utf-16-le")) // 2
    assert d["range"]["start"] == {"line": 2, "character": col16}
    [a] = _actions(client, uri, d["range"], [d])
    assert a["edit"]["changes"][uri][0]["range"] == d["range"]
    assert _apply(text, a["edit"]["changes"][uri]).count("+ name") == 1
    moved = "// a new first line 😀\n" + text
    client.change(uri, moved, 2)
    acts = _actions(client, uri, d["range"], [d])  # the old range, now on another line
    assert acts == []
    p = pos(moved, "nmae")
    [a] = _actions(client, uri, {"start": p, "end": p}, [])
    assert _apply(moved, a["edit"]["changes"][uri]) == moved.replace("nmae", "name")


RENAMES = """\
use agent "helper" as inv
use team "crew" as crew
stage a -> int { return b }
stage b -> int { return 1 }
stage c -> int[] {
  let v = agent(inv) { task "t" expect int }
  let w = agent(crew.main) { task "t" expect int }
  let xs = map [1, 2] as it { it + b + index }
  return [v + w + b + zz] + xs
}
"""


def test_rename_stages_and_use_aliases(client):
    uri = doc_uri("rename-globals.flow")
    client.open(uri, RENAMES)
    R = RENAMES
    prep = client.request(
        "textDocument/prepareRename", {"textDocument": {"uri": uri}, "position": pos(R, "b +")}
    )
    assert prep["placeholder"] == "b"
    # a stage, from a reference: also its forward reference in `a` (still an error there)
    edit = _rename(client, uri, pos(R, "b +"), "base")
    out = _apply(R, edit["changes"][uri])
    assert out == R.replace("return b", "return base").replace("stage b", "stage base").replace(
        "it + b", "it + base"
    ).replace("w + b", "w + base")
    assert sorted(_codes(out)) == sorted(_codes(R))
    # from its declaration: the same edit
    assert _rename(client, uri, pos(R, "b ->"), "base") == edit
    # `use` aliases: agent targets and team members
    out = _apply(R, _rename(client, uri, pos(R, "inv)"), "sleuth")["changes"][uri])
    assert "as sleuth" in out and "agent(sleuth)" in out and "inv" not in out
    out = _apply(R, _rename(client, uri, pos(R, "crew.main"), "squad")["changes"][uri])
    assert "as squad" in out and "agent(squad.main)" in out and "crew\n" not in out
    # refused: other global names, names visible at a reference, capture of an unknown name
    refused = [
        (pos(R, "b ->"), "a", "stage"),
        (pos(R, "b ->"), "inv", "`use`"),
        (pos(R, "b ->"), "input", "input"),
        (pos(R, "b ->"), "it", "in scope"),
        (pos(R, "b ->"), "index", "in scope"),
        (pos(R, "b ->"), "v", "in scope"),
        (pos(R, "b ->"), "zz", "change what names refer to"),
        (pos(R, "b ->"), "if", "reserved word"),
        (pos(R, "inv)"), "b", "stage"),
        (pos(R, "inv)"), "crew", "`use`"),
        (pos(R, "inv)"), "zz", "change what names refer to"),
        (pos(R, "crew.main"), "v", "in scope"),
        (pos(R, "inv)"), "agent", "read as a keyword there"),  # `agent(agent)`
        (pos(R, "crew.main"), "not a name", "not a valid name"),
    ]
    for p, new, why in refused:
        with pytest.raises(LspError) as exc:
            _rename(client, uri, p, new)
        assert exc.value.code == -32602 and why in str(exc.value), (new, str(exc.value))


def test_type_completion_inside_a_type_being_edited(client):
    """Regression (found while adding references): once the diagnostics of a half-typed field
    (`extra: `) were published, completion there lost the type being edited (`Report`) — it
    came from the analysis in which that item is a syntax error.  Deterministic now: the
    request waits for that analysis."""
    uri = doc_uri("complete-type.flow")
    text = SOURCE.replace("  files: path[]\n", "  files: path[]\n  extra: \n")
    client.open(uri, text)
    client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    got = labels(client, uri, pos(text, "extra: ", 7))
    assert {"text", "Report", "Level"} <= set(got) and "find" not in got


def test_quick_fixes_for_syntax_and_foreign_type_hints(client):
    """`=` in a condition ("did you mean `==`?", a syntax error) and another language's type
    name ("agentflow's string type is `text`") are fixed in place."""
    uri = doc_uri("fixes-foreign.flow")
    text = 'stage s -> int {\n  require 1 = 1 else fail "x"\n  return 1\n}\n'
    client.open(uri, text)
    [d] = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)[
        "diagnostics"
    ]
    assert d["code"] == "syntax-error" and "did you mean `==`?" in d["message"]
    [a] = _actions(client, uri, d["range"], [d])
    assert a["isPreferred"] and _apply(text, a["edit"]["changes"][uri]) == text.replace(
        "1 = 1", "1 == 1"
    )
    uri2 = doc_uri("fixes-foreign-type.flow")
    text = "type R {\n  a: string\n}\nstage s -> R {\n  return { a: 1 }\n}\n"
    client.open(uri2, text)
    diags = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri2)[
        "diagnostics"
    ]
    [d] = [x for x in diags if x["code"] == "unknown-type"]
    if "type is `text`" not in d["message"]:
        pytest.skip("the checker gives no foreign-type hint here")
    [a] = _actions(client, uri2, d["range"], [d])
    assert a["isPreferred"] and "  a: text\n" in _apply(text, a["edit"]["changes"][uri2])
