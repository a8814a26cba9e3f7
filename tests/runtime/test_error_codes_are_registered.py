"""Every error code spelled in the source is registered, as every diagnostic code is.

Run-time error codes (docs/spec/PLAN_IR.md §8) are registered once, in
``agentflow.core.vocabulary.ERROR_CODES`` (code, retryable, summary); ``RunError`` refuses any
other (an ``exit`` step's own code excepted, ``ExitError``), like ``Diagnostic`` refuses an
unregistered diagnostic code.  A construction on a path no test runs would only fail in a user's
run, so this test reads every ``.py`` under ``src/agentflow`` with :mod:`ast` and checks each code
written as a literal where a run-time error code goes:

- the code of ``RunError(…)``, ``ErrorInfo(…)`` and ``_error_content(…)`` (a tool result the
  model reads), positional or ``code=``;
- ``{"code": "…"}`` in a dict display (events, results);
- the right side of ``….code == "…"`` / ``….code in ("…", …)`` and ``.get("code") == …``
  (snake_case: a kebab-case one is a diagnostic code);
- the items of a module-level ``…_CODES`` collection (a dict's values).

Diagnostic codes written as literals (``Diagnostic("…", …)``, ``d.code == "…"``) must be in
``CODES``; a run-time code never passes for a diagnostic code or the other way round.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from support import source_tree

import agentflow
from agentflow.core.diagnostics import CODES, PLAN_CODES
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.errors import ErrorInfo, ExitError, RunError

PACKAGE = Path(agentflow.__file__).resolve().parent
#: the registry itself
REGISTRY = PACKAGE / "core" / "vocabulary.py"
#: callables whose first argument (or ``code=``) is a run-time error code
RUN_CODE_CALLS = frozenset({"RunError", "ErrorInfo", "_error_content"})


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _strings(node: ast.expr) -> list[ast.Constant]:
    """The string constants of a literal or of a tuple/list/set/frozenset(...) of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for e in node.elts for c in _strings(e)]
    if isinstance(node, ast.Call) and _name(node.func) in ("frozenset", "set", "tuple"):
        return [c for a in node.args for c in _strings(a)]
    return []


def _reads_code(node: ast.expr) -> bool:
    """``x.code``, ``x["code"]`` or ``x.get("code")``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "code"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "code"
    if isinstance(node, ast.Call) and _name(node.func) == "get" and node.args:
        first = node.args[0]
        return isinstance(first, ast.Constant) and first.value == "code"
    return False


def run_codes(tree: ast.AST) -> list[ast.Constant]:
    """The literals of ``tree`` written where a run-time error code goes (module docstring)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in RUN_CODE_CALLS:
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
            found += [c for a in args for c in _strings(a)]
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code" and value is not None:
                    found += _strings(value)
        elif isinstance(node, ast.Compare) and _reads_code(node.left):
            found += [c for c in _compared(node) if "-" not in c.value]
    for stmt in getattr(tree, "body", []):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        value = getattr(stmt, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id.endswith("_CODES") and value:
                items = value.values if isinstance(value, ast.Dict) else [value]
                found += [c for item in items for c in _strings(item)]
    return found


def diagnostic_codes(tree: ast.AST) -> list[ast.Constant]:
    """The literal codes of ``Diagnostic(…)`` constructions (first argument or ``code=``) and the
    kebab-case literals compared with a ``.code`` (``d.code == "unknown-type"``)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "Diagnostic":
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
            found += [c for a in args for c in _strings(a)]
        elif isinstance(node, ast.Compare) and _reads_code(node.left):
            found += [c for c in _compared(node) if "-" in c.value]
    return found


def _compared(node: ast.Compare) -> list[ast.Constant]:
    return [c for comp in node.comparators for c in _strings(comp)]


@functools.cache
def _sources() -> list[tuple[Path, ast.AST]]:
    return [
        (source.path, source.tree)
        for source in source_tree.sources(PACKAGE)  # each file parsed once per process
        if source.path != REGISTRY
    ]


@functools.cache
def _run_codes() -> list[tuple[Path, ast.Constant]]:
    """Every run-time code literal of the package (walked once per process)."""
    return [(path, c) for path, tree in _sources() for c in run_codes(tree)]


@functools.cache
def _diagnostic_codes() -> list[tuple[Path, ast.Constant]]:
    """Every diagnostic code literal of the package (walked once per process)."""
    return [(path, c) for path, tree in _sources() for c in diagnostic_codes(tree)]


def _where(path: Path, node: ast.Constant) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}"


def test_every_run_time_error_code_in_the_source_is_registered():
    unknown = [_where(path, c) for path, c in _run_codes() if c.value not in ERROR_CODES]
    assert unknown == [], "run-time error codes not in core.vocabulary.ERROR_CODES:\n" + "\n".join(
        unknown
    )


def test_every_diagnostic_code_in_the_source_is_registered():
    unknown = [_where(path, c) for path, c in _diagnostic_codes() if c.value not in CODES]
    assert unknown == [], "diagnostic codes not in core.diagnostics.CODES:\n" + "\n".join(unknown)


def _code_members() -> list[tuple[Path, ast.Attribute]]:
    """Every ``Code.NAME`` of the package."""
    return [
        (path, node)
        for path, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Code"
    ]


def test_the_walk_finds_the_codes_the_runtime_writes():
    """The checks see real constructions, not nothing: the executor's, the budget's, the
    cassette's and the planner's codes (``Code`` members since issue 34) are among them, and
    each member named exists (mypy says so too; this says it without mypy)."""
    from agentflow.core.vocabulary import Code

    named = _code_members()
    assert {"TOOL_ERROR", "VALIDATION", "ABORTED", "BUDGET_EXCEEDED", "REPLAY_MISS"} <= {
        node.attr for _, node in named
    }
    unknown = [
        f"{path}:{node.lineno}: Code.{node.attr}"
        for path, node in named
        if node.attr not in Code.__members__
    ]
    assert unknown == []
    assert {"unsupported-construct"} <= {c.value for _, c in _diagnostic_codes()}


def test_the_walk_flags_an_unregistered_code():
    tree = ast.parse(
        'raise RunError("tool_eror", "x")\n'
        'e = ErrorInfo(code="nope", message="m")\n'
        'd = {"code": "cancelled", "message": "m"}\n'
        'if err.code in ("timeout", "slow"):\n    pass\n'
        'HARD_STOP_CODES = frozenset({"aborted", "stopped"})\n'
    )
    assert sorted(c.value for c in run_codes(tree) if c.value not in ERROR_CODES) == [
        "cancelled",
        "nope",
        "slow",
        "stopped",
        "tool_eror",
    ]


def test_run_error_refuses_an_unregistered_code():
    with pytest.raises(ValueError, match="unregistered run-time error code 'tool_eror'"):
        RunError("tool_eror", "a typo")
    assert RunError("timeout", "slow").retryable
    assert not RunError("tool_error", "broke").retryable


def test_an_exit_step_keeps_its_own_code():
    """``exit`` takes any error-code name (docs/spec/PLAN_IR.md §5); the run ends with it."""
    err = ExitError("needs_review", "a person must look", "E4")
    assert err.info() == ErrorInfo("needs_review", "a person must look", "E4")


def test_run_time_codes_and_diagnostic_codes_do_not_mix():
    """Run-time codes are snake_case (``plan_cycle``), diagnostic codes kebab-case
    (``plan-cycle``); the plan codes of the diagnostic registry all start with ``plan-``."""
    assert all(c.replace("_", "").isalpha() and c.islower() for c in ERROR_CODES)
    assert all("_" not in c for c in CODES)
    assert not set(ERROR_CODES) & set(CODES)
    assert PLAN_CODES and all(c.startswith("plan-") and c in CODES for c in PLAN_CODES)


async def test_a_user_tool_raising_an_unregistered_code_fails_with_tool_error_naming_it():
    from agentflow.ir import load_plan_text
    from agentflow.runtime.executor import run_plan
    from agentflow.runtime.tools.build import build_catalog
    from agentflow.runtime.tools.user import function_tool

    def flaky(x: int) -> int:
        raise RunError("my_code", "custom")

    catalog = build_catalog(None, entry_points=False)
    catalog.register(function_tool(flaky))
    plan = load_plan_text(
        "version: 1\nname: p\nsteps:\n  - {id: E0, tool_name: user__flaky, input: {x: 1}}\n",
        "p.yaml",
    )
    result = await run_plan(plan, {}, catalog=catalog)
    assert (result.status, result.error.code, result.error.step_path) == (
        "error",
        "tool_error",
        "E0",
    )
    assert "unregistered run-time error code 'my_code'" in result.error.message


# --------------------------------------------------------------------------------------------
# Codes as registered constants (issue 34): every raise and comparison names a ``Code`` member


def _names_code(node: ast.expr) -> bool:
    """``x.code``, ``x["code"]``, ``x.get("code")``, or a variable ``code`` / ``…_code``."""
    if isinstance(node, ast.Name):
        return node.id == "code" or node.id.endswith("_code")
    return _reads_code(node)


def _literals(node: ast.expr) -> list[ast.Constant]:
    """:func:`_strings`, also through ``a if c else b`` and ``a or b``."""
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [c for v in node.values for c in _literals(v)]
    return _strings(node)


def spelled_codes(tree: ast.AST) -> list[ast.Constant]:
    """The registered run-time codes ``tree`` writes as string literals where a code goes: the
    places of :func:`run_codes`, the ``code=`` of any call, the default of a parameter ``code``
    / ``…_code``, what is assigned to or compared with a variable of that name, and the ``or``
    fallback of a code read (``data.get("code") or "failed"``)."""
    found = list(run_codes(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [c for k in node.keywords if k.arg == "code" for c in _literals(k.value)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = [
                *zip(
                    positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
                ),
                *zip(args.kwonlyargs, args.kw_defaults, strict=True),
            ]
            found += [
                c
                for arg, default in pairs
                if default is not None and (arg.arg == "code" or arg.arg.endswith("_code"))
                for c in _literals(default)
            ]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if _names_code(target):
                    found += _literals(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for name, value in zip(target.elts, node.value.elts, strict=False):
                        if _names_code(name):
                            found += _literals(value)
        elif isinstance(node, ast.Compare) and _names_code(node.left):
            found += [c for comp in node.comparators for c in _literals(comp)]
        elif isinstance(node, ast.BoolOp) and _names_code(node.values[0]):
            found += [c for v in node.values[1:] for c in _literals(v)]
    unique = {id(c): c for c in found if c.value in ERROR_CODES}
    return sorted(unique.values(), key=lambda c: (c.lineno, c.col_offset))


def test_no_run_time_error_code_is_written_as_a_string():
    """``RunError(Code.VALIDATION, …)``, never ``RunError("validation", …)``: a misspelt member
    fails mypy and the import, a misspelt string only the line that runs it."""
    spelled = [_where(path, c) for path, tree in _sources() for c in spelled_codes(tree)]
    assert spelled == [], "write these codes as agentflow.core.vocabulary.Code members:\n" + (
        "\n".join(spelled)
    )


def test_the_walk_finds_codes_written_as_strings():
    tree = ast.parse(
        'raise RunError("tool_error", "x")\n'
        'validate(args, code="validation")\n'
        'def f(x, code="aborted", *, on_code="timeout"): pass\n'
        'bound, code = 1, "deadline_exceeded"\n'
        'code = "outcome_unknown" if x else "failed"\n'
        'if code != "bad_path": pass\n'
        'c = data.get("code") or "parse_error"\n'
        'status = "aborted"\n'  # a status, not a code
        'raise RunError(Code.TIMEOUT, "fine")\n'
    )
    assert [c.value for c in spelled_codes(tree)] == [
        "tool_error",
        "validation",
        "aborted",
        "timeout",
        "deadline_exceeded",
        "outcome_unknown",
        "failed",
        "bad_path",
        "parse_error",
    ]


def test_the_code_members_are_the_registered_codes_and_travel_as_strings():
    import json
    import pickle

    from agentflow.core.vocabulary import Code

    assert [m.value for m in Code] == list(ERROR_CODES)  # the same codes, in the same order
    assert all(m.name == m.value.upper() for m in Code)
    assert Code.TIMEOUT == "timeout" and hash(Code.TIMEOUT) == hash("timeout")
    assert ERROR_CODES[Code.TOOL_ERROR].code == "tool_error"
    assert json.dumps({"code": Code.ABORTED}) == '{"code": "aborted"}'
    err = RunError(Code.VALIDATION, "bad")
    info = ErrorInfo(Code.FAILED, "m")
    assert type(err.code) is str and type(info.code) is str and type(err.info().code) is str
    assert pickle.loads(pickle.dumps(err)).code == "validation"
    assert type(pickle.loads(pickle.dumps(info)).code) is str


def _names_kind(node: ast.expr) -> bool:
    """``x.kind`` or a variable ``kind`` / ``…_kind``."""
    if isinstance(node, ast.Name):
        return node.id == "kind" or node.id.endswith("_kind")
    return isinstance(node, ast.Attribute) and node.attr == "kind"


def spelled_model_kinds(tree: ast.AST) -> list[ast.Constant]:
    """The :class:`~agentflow.errors.ModelErrorKind` values ``tree`` writes as string literals
    where a model failure's kind goes: ``ModelError``'s ``kind`` (second argument or
    ``kind=``), what is assigned to or compared with a ``kind`` (``exc.kind == "transient"``)."""
    from agentflow.errors import ModelErrorKind

    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "ModelError":
            args = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "kind")]
            found += [c for a in args for c in _literals(a)]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if _names_kind(target):
                    found += _literals(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for name, value in zip(target.elts, node.value.elts, strict=False):
                        if _names_kind(name):
                            found += _literals(value)
        elif isinstance(node, ast.Compare) and _names_kind(node.left):
            found += [c for comp in node.comparators for c in _literals(comp)]
    kinds = {k.value for k in ModelErrorKind}
    return sorted((c for c in found if c.value in kinds), key=lambda c: (c.lineno, c.col_offset))


def test_no_model_error_kind_is_written_as_a_string():
    spelled = [_where(path, c) for path, tree in _sources() for c in spelled_model_kinds(tree)]
    assert spelled == [], "write these kinds as agentflow.errors.ModelErrorKind members:\n" + (
        "\n".join(spelled)
    )
    tree = ast.parse(
        'raise ModelError("m", "transient")\nraise ModelError("m", kind="permanent")\n'
        'if exc.kind in ("rate_limit", "content_filter"): pass\n'
        'kind, message = "transient", "x"\nif event.kind == "step_started": pass\n'
    )
    assert [c.value for c in spelled_model_kinds(tree)] == [
        "transient",
        "permanent",
        "rate_limit",
        "content_filter",
        "transient",
    ]
