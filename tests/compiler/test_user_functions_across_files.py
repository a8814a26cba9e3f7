"""User functions across files and their diagnostics (docs/reference/programs.md "User
functions", docs/decisions.md "User functions (fnuser)")."""

from __future__ import annotations

from agentflow import api

SEV_LIB = (
    'type Sev = "low" | "medium" | "high"\n'
    'fn helper(s: Sev) -> int = match s { "low" => 1, "medium" => 2, "high" => 3 }\n'
    "fn rank(s: Sev) -> int = helper(s) * 10\n"
)


def test_a_function_imported_through_a_middle_file_brings_every_function_it_reaches(tmp_path):
    (tmp_path / "lib.flow").write_text(SEV_LIB)
    (tmp_path / "mid.flow").write_text(
        'import { rank, Sev } from "./lib.flow"\nfn rank2(s: Sev) -> int = rank(s) + 1\n'
    )
    top = tmp_path / "top.flow"
    top.write_text(
        'import { rank2 } from "./mid.flow"\nimport { Sev } from "./lib.flow"\n'
        "input { s: Sev }\nstage a -> int { return rank2(input.s) }\n"
    )
    assert api.check(str(top)).diagnostics == []
    plan = api.compile_flow(str(top)).plan
    assert set(plan["functions"]) == {"rank2", "rank", "helper"}
    assert plan["functions"]["helper"]["meta"]["source"] == "lib.flow:2:4"
    result = api.run_sync(top, {"s": "high"}, workspace=str(tmp_path))
    assert result.output == 31
