"""User functions in the checker, the lowering and the formatter (docs/reference/programs.md
"User functions", docs/decisions.md "User functions"): calls typed from the signature, the
body against the declared result, purity, recursion, names, named arguments; a plan's
`functions` section written once per function; `flowc fmt` round-trips."""

from __future__ import annotations

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source

HEAD = """\
type Severity = "low" | "medium" | "high"
type Ticket { title: text, severity: Severity }
input Ticket
fn rank(s: Severity) -> int = if s == "high" then 3 else if s == "medium" then 2 else 1
fn label(t: Ticket, prefix: text) -> text = "${prefix}: ${upper(t.title)}"
"""


def _diags(src: str) -> list[tuple[str, str, int, int]]:
    result = check_source(src, "f.flow")
    return [(d.code, d.message, d.span.line, d.span.column) for d in result.diagnostics]


def _codes(src: str) -> list[str]:
    return [d[0] for d in _diags(src)]


def test_calls_are_typed_from_the_declared_result():
    src = HEAD + "stage s -> int {\n  let r = rank(input.severity)\n  return r + 1\n}\n"
    assert _diags(src) == []
    bad = HEAD + "stage s -> text {\n  return rank(input.severity)\n}\n"
    assert _codes(bad) == ["type-mismatch"]


def test_an_argument_is_checked_against_its_parameter():
    src = HEAD + 'stage s -> int {\n  return rank("urgent")\n}\n'
    [(code, _, line, column)] = _diags(src)
    assert (code, line, column) == ("type-mismatch", 7, 15)


def test_a_body_is_checked_against_the_declared_result_at_the_body():
    src = "fn f(x: int) -> text = x + 1\nstage s -> text { return f(1) }\n"
    [(code, message, line, column)] = _diags(src)
    assert (code, line, column) == ("type-mismatch", 1, 24)
    assert "expected `text`" in message


def test_the_number_of_arguments_is_checked_with_the_signature_in_a_note():
    src = HEAD + "stage s -> int {\n  return rank(input.severity, 2)\n}\n"
    result = check_source(src, "f.flow")
    [d] = result.diagnostics
    assert d.code == "argument-count"
    assert d.message == "`rank` takes 1 argument, 2 given"
    assert d.notes[0].message == "`rank(s: Severity) -> int`"


def test_named_arguments_to_a_function_are_named_argument_not_a_tool_call():
    src = HEAD + "stage s -> int {\n  return rank(s: input.severity)\n}\n"
    result = check_source(src, "f.flow")
    [d] = result.diagnostics
    assert d.code == "named-argument"
    assert "named arguments make a tool call" in d.message
    assert d.hint == "pass them in order: `rank(s)`"
    assert result.tools.get("rank") is None


def test_an_unknown_function_suggests_the_user_functions():
    src = HEAD + "stage s -> int {\n  return rnak(input.severity)\n}\n"
    result = check_source(src, "f.flow")
    [d] = result.diagnostics
    assert (d.code, d.hint) == ("unknown-function", "did you mean `rank`?")


def test_a_body_reading_input_a_stage_or_calling_a_tool_is_impure():
    src = (
        "input { title: text }\n"
        "stage first -> int { return 1 }\n"
        'fn a(x: int) -> text = "${input.title}"\n'
        "fn b(x: int) -> int = first + x\n"
        'fn c(x: int) -> json = read_file(path: "p")\n'
        "stage s -> json { return [a(1), b(1), c(1)] }\n"
    )
    found = [d for d in _diags(src) if d[0] != "unused-variable"]
    assert [(d[0], d[2], d[3]) for d in found] == [
        ("impure-function", 3, 27),
        ("impure-function", 4, 23),
        ("impure-function", 5, 24),
    ]
    assert "uses the flow's `input`" in found[0][1]
    assert "uses the stage `first`" in found[1][1]
    assert "uses a tool call" in found[2][1]


def test_direct_and_mutual_recursion_are_refused_naming_the_cycle():
    src = (
        "fn fact(n: int) -> int = if n <= 1 then 1 else n * fact(n - 1)\n"
        "fn even(n: int) -> bool = if n == 0 then true else odd(n - 1)\n"
        "fn odd(n: int) -> bool = if n == 0 then false else even(n - 1)\n"
        "stage s -> bool { return fact(3) > 1 and even(4) }\n"
    )
    found = _diags(src)
    assert [(d[0], d[2], d[3]) for d in found] == [
        ("recursive-function", 1, 4),
        ("recursive-function", 2, 4),
    ]
    assert found[0][1] == "function `fact` calls itself: a function may not be recursive"
    assert "through `even` → `odd` → `even`" in found[1][1]


def test_a_function_may_not_take_a_library_function_a_tool_or_another_functions_name():
    src = (
        "fn upper(s: text) -> text = s\n"
        "fn read_file(s: text) -> text = s\n"
        "fn twice(x: int) -> int = x * 2\n"
        "fn twice(x: int) -> int = x + x\n"
        "stage s -> int { return twice(1) }\n"
    )
    found = _diags(src)
    assert [(d[0], d[2], d[3]) for d in found] == [
        ("duplicate-definition", 1, 4),
        ("duplicate-definition", 2, 4),
        ("duplicate-definition", 4, 4),
    ]
    assert "`upper` is a library function" in found[0][1]
    assert "`read_file` is a tool" in found[1][1]


def test_an_unused_parameter_is_a_warning_unless_named_with_an_underscore():
    src = "fn f(x: int, y: int, _z: int) -> int = x\nstage s -> int { return f(1, 2, 3) }\n"
    [(code, message, line, column)] = _diags(src)
    assert (code, message, line, column) == (
        "unused-variable",
        "parameter `y` of `f` is never used",
        1,
        14,
    )


def test_no_parameters_and_omittable_parameters_are_unsupported():
    src = "fn f(x?: int) -> int = 1\nstage s -> int { return f(1) }\n"
    assert "unsupported-construct" in _codes(src)
    src = "fn g() -> int = 1\nstage s -> int { return 1 }\n"
    assert _codes(src) == ["unsupported-construct"]


def test_a_function_calls_another_and_takes_named_types():
    src = HEAD + (
        'fn headline(t: Ticket) -> text = label(t, "P${rank(t.severity)}")\n'
        "stage s -> text { return headline(input) }\n"
    )
    assert _diags(src) == []


def test_the_plan_holds_each_called_function_once_and_keeps_the_calls():
    src = HEAD + (
        "fn twice(x: int) -> int = x + x\n"
        "fn unused(x: int) -> int = x\n"
        "stage s -> text {\n"
        "  let n = twice(twice(twice(twice(twice(twice(rank(input.severity)))))))\n"
        '  return label(input, "${n}")\n}\n'
    )
    plan = api.compile_source(src, "f.flow").plan
    assert list(plan).index("functions") < list(plan).index("steps")
    assert plan["functions"] == {
        "rank": {
            "params": ["s"],
            "expr": 'if s == "high" then 3 else if s == "medium" then 2 else 1',
            "meta": {"source": "f.flow:4:4"},
        },
        "label": {
            "params": ["t", "prefix"],
            "expr": '"${prefix}: ${upper(t.title)}"',
            "meta": {"source": "f.flow:5:4"},
        },
        "twice": {"params": ["x"], "expr": "x + x", "meta": {"source": "f.flow:6:4"}},
    }
    text = str(plan["steps"]) + str(plan["finish"])
    assert "twice(twice(twice(twice(twice(twice(rank(input.severity)))))))" in text


def test_a_flow_without_functions_has_no_functions_section():
    plan = api.compile_source("stage s -> int { return 1 }\n", "f.flow").plan
    assert "functions" not in plan


def test_fmt_lays_out_a_function_and_round_trips():
    messy = (
        'type Severity = "low" | "high"\n'
        "/// ranks\n"
        'fn   rank( s :Severity)->int=if s=="high" then 3 else 1\n'
        'stage s -> int { return rank("low") }\n'
    )
    once = format_source(messy, "f.flow")
    assert 'fn rank(s: Severity) -> int = if s == "high" then 3 else 1\n' in once
    assert "/// ranks\nfn rank" in once
    assert format_source(once, "f.flow") == once
    assert check_source(once, "f.flow").ok


LIB = """\
type Severity = "low" | "medium" | "high"
fn base(s: Severity) -> int = if s == "high" then 3 else 1
fn rank(s: Severity) -> int = base(s) * 10
"""


def _project(tmp_path, main: str):  # type: ignore[no-untyped-def]
    (tmp_path / "lib.flow").write_text(LIB)
    path = tmp_path / "main.flow"
    path.write_text(main)
    return path


def test_an_imported_function_brings_its_types_and_the_functions_it_calls(tmp_path):
    main = 'import { rank, Severity } from "./lib.flow"\nstage s -> int { return rank("high") }\n'
    path = _project(tmp_path, main)
    result = api.check(str(path))
    assert result.diagnostics == []
    plan = api.compile_flow(str(path)).plan
    assert set(plan["functions"]) == {"rank", "base"}
    assert plan["functions"]["base"]["meta"]["source"] == "lib.flow:2:4"


def test_a_function_brought_by_another_is_not_a_name_of_the_importer(tmp_path):
    main = (
        'import { rank } from "./lib.flow"\nstage s -> int { return base("low") + rank("low") }\n'
    )
    result = api.check(str(_project(tmp_path, main)))
    [d] = result.diagnostics
    assert d.code == "unknown-function" and "add it to the `import`" in (d.hint or "")


def test_a_function_is_not_renamed_on_import_and_may_not_clash_with_a_local_one(tmp_path):
    main = (
        'import { rank as r, base } from "./lib.flow"\n'
        "fn base(x: int) -> int = x\n"
        "stage s -> int { return base(1) }\n"
    )
    codes = [d.code for d in api.check(str(_project(tmp_path, main))).diagnostics]
    assert codes == ["unsupported-construct", "import-conflict"]


def test_a_function_that_does_not_parse_is_one_syntax_error_not_also_its_calls():
    src = "fn f(x: int) = x\nstage s -> int { return f(1) }\n"
    assert _codes(src) == ["syntax-error"]


def test_catch_knows_what_a_functions_body_can_fail_with():
    src = (
        "input { raw: text }\n"
        "fn num(s: text) -> int = parse_int(s)\n"
        "fn shout(s: text) -> text = upper(s)\n"
        "stage s -> json {\n"
        "  let n = num(input.raw) catch on [parse_error] { -1 }\n"
        '  let t = shout(input.raw) catch on [parse_error] { "" }\n'
        "  return [n, t]\n}\n"
    )
    found = _diags(src)
    assert [(d[0], d[2]) for d in found] == [("impossible-error-code", 6)]
