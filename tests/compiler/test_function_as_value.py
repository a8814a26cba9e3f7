"""A function named without its call is `function-as-value`, with its signature and the call
to write (docs/reference/programs.md "User functions", docs/diagnostics.md)."""

from __future__ import annotations

from agentflow import api


def _errors(tmp_path, source):
    path = tmp_path / "f.flow"
    path.write_text(source)
    return [d for d in api.check(str(path)).diagnostics if d.severity == "error"]


def test_a_user_function_bound_by_a_let_says_to_call_it_with_its_signature(tmp_path):
    [d] = _errors(
        tmp_path,
        "fn myfn(a: int, b: int) -> int = a + b\n"
        "stage s -> int {\n  let _f = myfn\n  return 1\n}\n",
    )
    assert (d.code, d.span.line, d.span.column) == ("function-as-value", 3, 12)
    assert d.message == "`myfn` is a function: it is called, not used as a value"
    assert [(n.message, n.span.line if n.span else None) for n in d.notes] == [
        ("`myfn(a: int, b: int) -> int`", 1)
    ]
    assert d.hint is not None and d.hint.startswith("call it with its arguments, `myfn(a, b)`")


def test_a_user_function_passed_as_an_argument_says_to_call_it(tmp_path):
    [d] = _errors(
        tmp_path,
        "fn myfn(a: int) -> int = a + 1\nfn g(h: int) -> int = h\n"
        "stage s -> int { return g(myfn) }\n",
    )
    assert d.code == "function-as-value"
    assert "`myfn(a)`" in (d.hint or "")


def test_a_library_function_named_without_its_call_says_to_call_it(tmp_path):
    [d] = _errors(tmp_path, 'stage s -> text {\n  let _f = upper\n  return "a"\n}\n')
    assert d.code == "function-as-value"
    assert [n.message for n in d.notes] == ["`upper(s: text) -> text`"]
    assert "`upper(s)`" in (d.hint or "")


def test_a_library_function_name_close_to_a_variable_is_still_a_misspelling(tmp_path):
    [d] = _errors(
        tmp_path,
        'stage s -> text {\n  let line = "a"\n  return lines\n}\n',
    )
    assert d.code == "unknown-name"
    assert "`line`" in (d.hint or "")


def test_a_variable_of_a_function_s_name_is_its_value(tmp_path):
    assert _errors(tmp_path, 'stage s -> text {\n  let upper = "a"\n  return upper\n}\n') == []


def test_a_let_refused_as_a_function_is_not_also_not_callable_when_called(tmp_path):
    # one mistake, one diagnostic: `f("a")` after `let f = upper` is not also `not-callable`
    found = _errors(tmp_path, 'stage s -> text {\n  let f = upper\n  return f("a")\n}\n')
    assert [(d.code, d.span.line) for d in found] == [("function-as-value", 2)]


def test_a_variable_with_a_value_called_is_still_not_callable(tmp_path):
    found = _errors(tmp_path, 'stage s -> text {\n  let f = 1\n  return f("a")\n}\n')
    assert [(d.code, d.span.line) for d in found] == [("not-callable", 3)]
