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


def test_two_libraries_private_helpers_of_one_name_are_one_conflict_naming_both(tmp_path):
    (tmp_path / "lib.flow").write_text(SEV_LIB)
    (tmp_path / "lib2.flow").write_text(
        "fn helper(x: int) -> int = x + 1\nfn bump(x: int) -> int = helper(x)\n"
    )
    main = tmp_path / "f.flow"
    main.write_text(
        'import { rank, Sev } from "./lib.flow"\nimport { bump } from "./lib2.flow"\n'
        'input { s: Sev }\nstage x -> text { return "${rank(input.s)} ${bump(1)}" }\n'
    )
    [d] = api.check(str(main)).diagnostics
    assert d.code == "import-conflict"
    assert "declared in this file" not in d.message
    assert "`helper` of `./lib.flow` (which `rank` calls)" in d.message
    assert "`helper` of `./lib2.flow` (which `bump` calls)" in d.message
    assert "rename one of the two `helper`s" in (d.hint or "")


def test_a_local_function_named_like_a_librarys_helper_is_not_called_imported(tmp_path):
    (tmp_path / "lib.flow").write_text(SEV_LIB)
    main = tmp_path / "e.flow"
    main.write_text(
        'import { rank, Sev } from "./lib.flow"\ninput { s: Sev }\n'
        "fn helper(s: Sev) -> int = 1000\n"
        'stage x -> text { return "${rank(input.s)} ${helper(input.s)}" }\n'
    )
    [d] = [d for d in api.check(str(main)).diagnostics if d.severity == "error"]
    assert d.code == "import-conflict" and d.span.line == 3
    assert "imported" not in d.message.split(":")[0]
    assert "`helper` of `./lib.flow` (which `rank` calls)" in d.message
    assert d.hint == "rename this file's `helper` (and its calls)"


def test_a_function_a_file_only_imports_is_told_with_the_file_that_declares_it(tmp_path):
    (tmp_path / "lib.flow").write_text(SEV_LIB)
    (tmp_path / "mid.flow").write_text(
        'import { rank, Sev } from "./lib.flow"\nfn rank2(s: Sev) -> int = rank(s) + 1\n'
    )
    top = tmp_path / "top.flow"
    top.write_text(
        'import { rank } from "./mid.flow"\nimport { rank2, Sev } from "./mid.flow"\n'
        "input { s: Sev }\nstage a -> int { return rank2(input.s) + rank(input.s) }\n"
    )
    found = api.check(str(top)).diagnostics
    assert [(d.code, d.span.line) for d in found] == [("unknown-import", 1), ("unknown-import", 2)]
    fn = found[0]
    assert fn.message == (
        "`rank` is a function that `./mid.flow` imports from `./lib.flow`: a file offers only "
        "what it declares"
    )
    assert (
        fn.hint == 'import it from the file that declares it: `import { rank } from "./lib.flow"`'
    )
