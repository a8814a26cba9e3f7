"""Front-end limits that used to break (issue 16): ``compile`` of 103+ chained ``+`` (the plan
text nested one bracket per operator), checking a literal union of 10,000 members (quadratic:
≈ 9 s), and ``flowc fmt`` on a doubled optional ``T? ?`` (printed as the ``??`` operator) and
on a 500-deep member chain (RecursionError in its meaning check)."""

from __future__ import annotations

import time

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source


def _load(plan):
    from agentflow.ir.loader import load_plan_data

    return load_plan_data(plan, "chain.yaml")


def test_200_chained_additions_compile_and_run():
    from agentflow.runtime.executor import run_plan_sync

    text = "stage s -> int {\n  return " + " + ".join(["1"] * 200) + "\n}\n"
    plan = api.compile_source(text, "chain.flow").plan
    # flat, no parenthesis per operator (a chain past 150 operators gets a value step for its
    # left part, so the template stays within the template parser's depth)
    assert all("(" not in str(step["input"]["value"]) for step in plan["steps"])
    assert run_plan_sync(_load(plan)).output == 200


def test_lowering_keeps_only_the_parentheses_precedence_needs():
    from agentflow.runtime.executor import run_plan_sync

    cases = {
        "10 - 3 - 2": 5,
        "10 - (3 - 2)": 9,
        "2 * 3 + 4 * 5": 26,
        "(2 + 3) * 4": 20,
        "2 + 3 * 4 % 5": 4,
        "1 < 2 == true": None,  # comparisons do not chain: a check error, not a lowering one
        "(1 < 2) == true": True,
        "not (1 > 2) and 3 in [1, 2, 3]": True,
        "null ?? 1 ?? 2": 1,
        "8 / 2 / 2": 2,
    }
    for expr, expected in cases.items():
        text = f"stage s -> json {{\n  return {expr}\n}}\n"
        if expected is None:
            assert not check_source(text, "p.flow").ok
            continue
        plan = api.compile_source(text, "p.flow").plan
        assert run_plan_sync(_load(plan)).output == expected, (expr, plan["steps"])


def test_a_literal_union_of_10000_members_checks_in_linear_time():
    members = " | ".join(f'"m{i}"' for i in range(10_000))
    text = f'type T = {members}\nstage s -> T {{\n  return "m5"\n}}\n'
    started = time.process_time()
    result = check_source(text, "big.flow")
    took = time.process_time() - started
    assert result.ok, [d.message for d in result.diagnostics]
    assert took < 4.0, took  # CPU seconds; was ≈ 9 s


def test_fmt_keeps_a_doubled_optional_apart():
    text = "type T = { a: int? ? }\n"
    assert format_source(text, "q.flow") == text
    assert format_source("type T = { a: int ? ? ? }\n", "q.flow") == "type T = { a: int? ? ? }\n"
    assert check_source(format_source(text, "q.flow"), "q.flow").ok


def test_fmt_of_a_very_long_member_chain_is_checked_without_recursion():
    for chain in (".a" * 3000, "[0]" * 1000):
        text = "stage  s -> int {\n  return input" + chain + "\n}\n"
        out = format_source(text, "deep.flow")
        assert out.startswith("stage s -> int {") and format_source(out, "deep.flow") == out
