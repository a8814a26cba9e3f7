"""compiler.lowering: programs that must not blow up the compiler (docs/spec/LANGUAGE.md §10,
docs/decisions.md "Lowering"), plan names from awkward file names, and clean CLI errors.

Covered: `let x1 = x0 + x0` chains (exponential plans), long `let` chains (templates nested
deeper than the loader allows), file stems that are not plan names, and clean errors instead of
tracebacks from `flowc compile` / `flowc schema`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support.timing import Stretch

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.checker import flow_name_from_file
from agentflow.ir.dump import dump_plan
from agentflow.ir.loader import load_plan_data


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _doubling(n: int) -> str:
    lets = "\n".join(f"  let x{i} = x{i - 1} + x{i - 1}" for i in range(1, n))
    return f"input {{ n: int }}\nstage a -> int {{\n  let x0 = input.n\n{lets}\n  return x{n - 1}\n}}\n"


def _chain(n: int) -> str:
    lets = "\n".join(f"  let x{i} = x{i - 1} + 1" for i in range(1, n))
    return f"stage a -> int {{\n  let x0 = 0\n{lets}\n  return x{n - 1} + 1\n}}\n"


def _run(path: Path, data=None):
    return api.run_sync(path, data or {}, shape_cache=False)


def _value_steps(plan: dict) -> list[dict]:
    return [s for s in plan["steps"] if s["tool_name"] == "value"]


# ---------------------------------------------------------------------------------------------
# Pure lets: inline when small, materialise once otherwise


def test_doubling_let_chain_compiles_fast_small_and_right(tmp_path):
    flow = _write(tmp_path, "blow.flow", _doubling(30))
    with Stretch() as clock:
        compiled = api.compile_flow(flow)
    text = compiled.to_yaml()
    assert clock.took < clock.bound(10)  # was exponential: 20 lets took 25 s, 30 never finished
    assert len(text) < 10_000
    steps = _value_steps(compiled.plan)
    assert steps and all(s["meta"]["name"].startswith("x") for s in steps)
    assert all(s["meta"]["stage"] == "a" for s in steps)
    result = _run(flow, {"n": 1})
    assert result.status == "ok" and result.output == 2**29


def test_plan_size_grows_linearly_with_the_chain(tmp_path):
    small = api.compile_flow(_write(tmp_path, "c100.flow", _doubling(100))).to_yaml()
    large = api.compile_flow(_write(tmp_path, "c200.flow", _doubling(200))).to_yaml()
    assert len(large) < 2.5 * len(small)


def test_two_hundred_chained_lets_compile_load_and_run(tmp_path):
    flow = _write(tmp_path, "lets200.flow", _chain(200))
    with Stretch() as clock:
        compiled = api.compile_flow(flow)  # includes the loader round trip
    assert clock.took < clock.bound(10)
    load_plan_data(compiled.plan, str(flow))
    assert len(compiled.to_yaml()) < 20_000
    res = CliRunner().invoke(main, ["run", str(flow)])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == "200"


def test_small_lets_are_still_inlined(tmp_path):
    flow = _write(
        tmp_path,
        "small.flow",
        "input { n: int }\nstage a -> int {\n  let d = input.n * 2\n  let e = d + d\n  return e + d\n}\n",
    )
    plan = api.compile_flow(flow).plan
    assert len(plan["steps"]) == 1  # the flow's single value step, no step per let
    assert plan["steps"][0]["input"]["value"] == ("{{ input.n * 2 + input.n * 2 + input.n * 2 }}")
    assert _run(flow, {"n": 3}).output == 18


def test_a_long_let_used_once_is_inlined_but_a_long_shared_one_is_a_step(tmp_path):
    words = "word " * 60  # 300 characters of text, one string literal (shallow)
    let = f'  let t = "{words}${{input.who}}"\n'
    head = "input { who: text }\nstage a -> text {\n"
    once = _write(tmp_path, "once.flow", head + let + "  return t\n}\n")
    plan = api.compile_flow(once).plan
    assert len(plan["steps"]) == 1 and "name" not in plan["steps"][0]["meta"]
    assert plan["steps"][0]["input"]["value"] == '{{ "' + words + '${input.who}" }}'
    shared = _write(tmp_path, "shared.flow", head + let + "  return t + t\n}\n")
    plan = api.compile_flow(shared).plan
    (first,) = plan["steps"]
    assert first["tool_name"] == "value" and first["meta"]["name"] == "t"
    assert first["meta"]["source"] == "shared.flow:3:11"
    assert plan["finish"]["output"] == "{{ E0 + E0 }}"
    assert _run(shared, {"who": "x"}).output == (words + "x") * 2


def test_a_deep_let_used_once_is_a_step(tmp_path):
    words = '"w39"'
    for i in reversed(range(39)):  # "w0" + ("w1" + (…)): 39 nested parentheses once printed
        words = f'"w{i}" + ({words})'

    flow = _write(
        tmp_path, "deep_once.flow", f"stage a -> text {{\n  let t = {words}\n  return t\n}}\n"
    )
    plan = api.compile_flow(flow).plan
    assert plan["steps"][0]["meta"]["name"] == "t"
    assert plan["finish"]["output"] == "{{ E0 }}"
    assert _run(flow).output == "".join(f"w{i}" for i in range(40))


def test_doubling_stage_chain(tmp_path):
    stages = "\n".join(f"stage s{i} -> int {{ return s{i - 1} + s{i - 1} }}" for i in range(1, 30))
    flow = _write(
        tmp_path,
        "stages.flow",
        f"input {{ n: int }}\nstage s0 -> int {{ return input.n }}\n{stages}\n",
    )
    compiled = api.compile_flow(flow)
    assert len(compiled.to_yaml()) < 10_000
    assert _run(flow, {"n": 1}).output == 2**29


def test_doubling_lets_inside_map_and_reduce_bodies(tmp_path):
    body = "\n".join(f"    let y{i} = y{i - 1} + y{i - 1}" for i in range(1, 25))
    flow = _write(
        tmp_path,
        "bodies.flow",
        "input { xs: int[] }\n"
        "stage m -> int[] {\n  map input.xs as x {\n    let y0 = x\n"
        + body
        + "\n    return y24\n  }\n}\n"
        "stage r -> int {\n  reduce m as x, acc = 0 {\n    let y0 = acc + x\n"
        + "\n".join(f"    let y{i} = y{i - 1} + 1" for i in range(1, 150))
        + "\n    return y149\n  }\n}\n",
    )
    compiled = api.compile_flow(flow)
    assert len(compiled.to_yaml()) < 20_000
    assert set(compiled.plan["plans"]) == {"bodies__m_0", "bodies__r_0"}  # outlined bodies
    result = _run(flow, {"xs": [1, 2]})
    assert result.status == "ok"
    assert result.output == (2**24 + 149) + 2 * 2**24 + 149


# ---------------------------------------------------------------------------------------------
# Plan names from file names


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("bug-triage.flow", "bug_triage"),
        ("v1.2.flow", "v1_2"),
        ("1st.flow", "flow_1st"),
        ("café.flow", "caf_"),
        ("a b.flow", "a_b"),
        (".hidden.flow", "_hidden"),
        ("My-Flow.flow", "my_flow"),
        ("dir/x.y/ok.flow", "ok"),
        ("", "flow"),
    ],
)
def test_flow_name_from_file(file, name):
    assert flow_name_from_file(file) == name


@pytest.mark.parametrize("stem", ["v1.2", "1st", "café", "a b", ".hidden", "9"])
def test_awkward_file_names_compile_and_run(tmp_path, stem):
    flow = _write(tmp_path, f"{stem}.flow", "stage a -> int { return 1 }\n")
    res = CliRunner().invoke(main, ["compile", str(flow)])
    assert res.exit_code == 0, res.output
    assert f"name: {flow_name_from_file(flow.name)}\n" in res.stdout
    run = CliRunner().invoke(main, ["run", str(flow)])
    assert run.exit_code == 0 and run.stdout.strip() == "1"


def test_header_name_wins_over_file_name(tmp_path):
    flow = _write(tmp_path, "1st.flow", 'flow first "x"\nstage a -> int { return 1 }\n')
    assert api.compile_flow(flow).plan["name"] == "first"


# ---------------------------------------------------------------------------------------------
# No traceback from compile / run / schema


def test_compiled_plan_that_fails_validation_is_an_internal_error(tmp_path, monkeypatch):
    """A compiler bug — a lowered plan the loader refuses — is an `unsupported-construct`
    "internal compiler error" at the offending step's source, never a traceback. (No known
    program does this any more: lowering is made to produce a plan it does not validate.)"""
    from agentflow import api_compile  # `compile_checked` lowers through its own import

    real = api_compile.lower

    def broken(result, *, file, source=None):
        plan = real(result, file=file, source=source)
        plan["steps"][0]["input"]["value"] = "{{ 1 + ) }}"  # a template that does not parse
        return plan

    monkeypatch.setattr(api_compile, "lower", broken)
    flow = _write(tmp_path, "deep.flow", "input { n: int }\nstage a -> json {\n  return 1\n}\n")
    with pytest.raises(api.CompileError) as info:
        api.compile_flow(flow)
    diag = info.value.diagnostics[0]
    assert diag.code == "unsupported-construct"
    assert diag.message.startswith("internal compiler error")
    assert (diag.span.file, diag.span.line) == (str(flow), 3)  # the value step's `return`
    for command in (["compile", str(flow)], ["run", str(flow), "--input", '{"n": 1}']):
        res = CliRunner().invoke(main, command)
        assert res.exit_code == 1, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)
        assert f"{flow}:3:3: error[unsupported-construct]: internal compiler error" in res.stderr


def test_long_operator_chains_and_deep_lets_compile(tmp_path):
    """What used to exceed the template parser's limits: a chain of 199 operators (printed with
    a parenthesis per operator: 200 levels), 14 chained lets inlined 92 brackets deep."""
    chain = " + ".join(["input.n"] * 200)
    lets = "\n".join(f"  let y{i} = y{i - 1} + 1" for i in range(1, 15))
    deep = "[" * 92 + "y14" + "]" * 92
    for name, body in (
        ("chain", f"  return {chain}"),
        ("deep", f"  let y0 = input.n\n{lets}\n  return {deep}"),
    ):
        flow = _write(
            tmp_path, f"{name}.flow", f"input {{ n: int }}\nstage a -> json {{\n{body}\n}}\n"
        )
        api.compile_flow(flow)
    assert _run(tmp_path / "chain.flow", {"n": 1}).output == 200


def test_compile_to_a_missing_directory_is_a_clean_error(tmp_path):
    flow = _write(tmp_path, "ok.flow", "stage a -> int { return 1 }\n")
    out = tmp_path / "no" / "such" / "x.yaml"
    res = CliRunner().invoke(main, ["compile", str(flow), "-o", str(out)])
    assert res.exit_code == 1
    assert isinstance(res.exception, SystemExit)
    assert f"error: cannot write {out}" in res.stderr


def test_schema_of_a_missing_file_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["schema", str(tmp_path / "missing.flow"), "T"])
    assert res.exit_code == 2
    assert isinstance(res.exception, SystemExit)
    assert "missing.flow: no such file" in res.stderr


def test_dump_is_stable_for_materialised_lets(tmp_path):
    flow = _write(tmp_path, "blow.flow", _doubling(12))
    assert dump_plan(api.compile_flow(flow).plan) == dump_plan(api.compile_flow(flow).plan)
