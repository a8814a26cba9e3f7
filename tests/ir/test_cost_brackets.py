"""`flowc cost` formulas bracket a symbol (an expression of the program) whose own operator binds
less tightly than the `×` or `+` around it (docs/reference/cli.md "flowc cost")."""

from __future__ import annotations

from agentflow.api import compile_source, plan_from_data, worst_case_cost
from agentflow.ir.cost import format_poly

LOOP = """use agent "writer" as w
input { max_rounds: int?, topic: text }
stage draft -> text {
  loop up to input.max_rounds ?? 3 as r, s = "" {
    agent(w) { task "improve ${s} on ${input.topic}" expect text }
  } until len(s) > 100 else s
}
stage more -> text {
  agent(w) { task "more" expect text }
}
"""


def test_a_loop_bound_with_a_default_is_bracketed_in_every_formula():
    plan = plan_from_data(compile_source(LOOP, "loop.flow").plan, "loop.flow")
    cost = worst_case_cost(plan)
    assert cost["roles"]["chat"] == "8 × (input.max_rounds ?? 3) + 8"
    assert cost["total"] == "16 × (input.max_rounds ?? 3) + 16"
    (loop,) = cost["loops"]
    assert "up to (input.max_rounds ?? 3) rounds × 16 per round" in loop


def test_operands_are_bracketed_only_where_their_operator_binds_less_tightly():
    assert format_poly({("input.a + input.b",): 2}) == "2 × (input.a + input.b)"
    assert format_poly({("input.a + input.b",): 1, (): 3}) == "input.a + input.b + 3"
    assert format_poly({("input.a * 2",): 4}) == "4 × input.a * 2"
    assert format_poly({("len(input.xs)",): 4, (): 1}) == "4 × len(input.xs) + 1"
    assert format_poly({("input.n ?? 3",): 1}) == "(input.n ?? 3)"
    assert format_poly({("if input.ok then 1 else 2",): 3}) == "3 × (if input.ok then 1 else 2)"


BOUNDED = """use agent "w" as w
input { rounds: int @range(1, 6), files: text[], max_files: int @range(1, 3), n: int }
stage a -> text[] {
  return map take(input.files, input.max_files) as f { agent(w) { task "${f}" expect text } }
}
stage b -> int {
  let s = loop up to input.rounds as r, st = 0 { st + len(agent(w) { task "go" expect text }) }
  return s
}
stage c -> int[] {
  return parallel map range(0, 5) as i { len(agent(w) { task "x" expect text }) }
}
stage d -> int[] {
  return map range(2, input.max_files + 4) as i { len(agent(w) { task "x" expect text }) }
}
stage e -> int {
  loop up to input.n as r, st = 0 { st + len(agent(w) { task "go" expect text }) }
}
"""


def test_every_count_uses_the_same_bounds_a_loops_range_bound_and_a_constant_range():
    plan = plan_from_data(compile_source(BOUNDED, "b.flow").plan, "b.flow")
    cost = worst_case_cost(plan)
    # take: 3 × 16; loop up to input.rounds (@range(1, 6)): 6 × 16; range(0, 5): 5 × 16;
    # range(2, input.max_files + 4): at most 7 - 2 = 5 items × 16; loop up to input.n: 16 × n
    assert cost["total"] == f"16 × input.n + {3 * 16 + 6 * 16 + 5 * 16 + 5 * 16}"
    assert any("up to 6 rounds × 16 per round = 96" in loop for loop in cost["loops"])
    assert any("up to input.n rounds" in loop for loop in cost["loops"])
