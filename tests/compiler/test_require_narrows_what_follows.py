"""`require c else fail "…"` narrows the statements after it as `if not c { fail … }` does
(docs/reference/types.md "Narrowing"): after `require input.n != null else fail …`, `input.n`
is an `int`; after `require p.kind == "cat" else fail …`, `p` is a `Cat`. These were refused
(`+` cannot combine `int?` and `int`; `lives` is not a field of every member). The narrowing
ends with the block, and a `require` that narrows nothing changes nothing."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source

HEAD = """type Cat = { kind: "cat", lives: int }
type Dog = { kind: "dog", name: text }
input { n: int?, pet: Cat | Dog, ok: bool }
"""

NARROWED = {
    "not null": 'stage s -> int {\n  require input.n != null else fail "no n"\n  return input.n + 1\n}\n',
    "a member": (
        'stage s -> int {\n  require input.pet.kind == "cat" else fail "not a cat"\n'
        "  return input.pet.lives\n}\n"
    ),
    "both, with and": (
        'stage s -> int {\n  require input.n != null and input.pet.kind == "cat" else fail "no"\n'
        "  return input.n + input.pet.lives\n}\n"
    ),
}


@pytest.mark.parametrize("stage", NARROWED.values(), ids=NARROWED.keys())
def test_what_follows_a_require_is_narrowed(stage):
    assert check_source(HEAD + stage, "r.flow").diagnostics == []


def test_the_narrowing_ends_with_the_block():
    stage = (
        'stage s -> int {\n  if input.ok {\n    require input.n != null else fail "no n"\n'
        "  }\n  return input.n + 1\n}\n"
    )
    (d,) = check_source(HEAD + stage, "r.flow").diagnostics
    assert d.message == "`+` cannot combine `int?` and `int`"


def test_a_narrowed_require_runs_and_fails_as_before(tmp_path):
    src = HEAD + NARROWED["not null"]
    plan = api.plan_from_data(api.compile_source(src, "r.flow").plan, "r.flow")
    pet = {"kind": "dog", "name": "r"}
    ok = api.run_sync(plan, {"n": 2, "pet": pet, "ok": True}, workspace=tmp_path)
    assert (ok.status, ok.output) == ("ok", 3)
    failed = api.run_sync(plan, {"pet": pet, "ok": True}, workspace=tmp_path)
    assert failed.status == "error" and "no n" in failed.error.message
