"""Property test of the compiler (docs/spec/LANGUAGE.md §10): every program that checks clean
compiles, its plan validates, holds every clause the program wrote, and runs to the value a
direct Python evaluation of the same program gives.

The generator (:mod:`support.program_gen`) covers every construct and clause position — types,
aliases, constraints, `extern type`, tools typed and untyped, `let`/`require`/`fail`/`if`/`else
if`, literals of every kind, interpolation, every operator, `??`, projections, `map` /
`parallel map` with each kind of `limit`, `filter` (conditions and judges), `reduce`, `ask`,
`verify`, `agent` with every clause (constant, `let`-bound and run-time settings) and targets,
`map … tolerate N`/`tolerate P%` with `.values`/`.errors`, `catch [on [codes]] [as err]`, `test`
blocks (stubs, expectations), `deadline`, budgets, `output`. Settings only known at run time where the plan fixes them
(`timeout input.t`, `retry { attempts: input.k }`, a budget) are drawn too: those programs must
be refused with `invalid-value`, never compiled wrongly.

- :func:`test_generated_programs_sweep`: a fixed-seed sweep of ``SWEEP`` programs (4,000) through
  check → compile → plan validation → "nothing dropped", on two worker processes; every construct
  tag must occur in at least ``MIN_USES`` programs (4 at 4,000: one in every 1,000, the rate the
  20,000-program sweep asked for). This is the small version of a fuzz battery, sized for the
  suite's time budget (~6 ms of one core per program: 4,000 programs cost ~25 s of CPU, 20,000
  cost ~2 min, a fifth of the whole suite's); ``bench/compile_property.py`` runs the long sweeps
  (100,000 by default, any seed, without the length cap), and ``FLOW_PROPERTY_SWEEP=20000`` runs
  this test at its former size. The sweep keeps programs of at most ``MAX_CHARS`` characters,
  drawing longer ones again: the front end's cost grows with the text, and a longer program only
  nests the same constructs deeper.
- :func:`test_random_programs_compile_validate_and_run`: the scripted-model run is the costly part
  (an HTTP round trip per agent), so only a sample runs: hypothesis draws (shrinkable) programs of
  the runnable subset and runs each against the scripted model (a real loopback HTTP server).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chat_server import TEST_API_KEY, ChatServer, answer, text
from support.program_gen import (
    CONSTRUCTS,
    DrawSource,
    catalog_functions,
    draw_input,
    draw_program,
    dropped,
    sweep,
)

from agentflow import api
from agentflow.compiler.lowering import lower
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.catalog import Catalog

#: programs per run of the sweep, and its seed
SWEEP = int(os.environ.get("FLOW_PROPERTY_SWEEP", "4000"))  # bench/compile_property.py: more
SEED = 20261201
#: the longest program the sweep keeps (longer ones are drawn again), and the fewest programs
#: each construct tag must occur in
MAX_CHARS = 900
MIN_USES = 20 * SWEEP // 20000


@pytest.mark.battery  # README.md "The battery tier"
def test_generated_programs_sweep():
    workers = 2
    share = [SWEEP // workers + (i < SWEEP % workers) for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(sweep, [SEED + i for i in range(workers)], share, [MAX_CHARS] * 2))
    failures = [f for p in parts for f in p["failures"]]
    assert not failures, "\n\n".join(f"{why}\n{src}" for src, why in failures[:3])
    programs = sum(p["programs"] for p in parts)
    clean = sum(p["clean"] for p in parts)
    refused = sum(p["refused"] for p in parts)
    assert programs == SWEEP
    assert clean >= 0.6 * programs, (clean, refused, programs)  # the property is not vacuous
    assert refused > 0  # the refusal path of run-time settings is exercised too
    uses = sum((p["seen"] for p in parts), Counter())
    assert CONSTRUCTS - set(uses) == set(), f"never generated: {sorted(CONSTRUCTS - set(uses))}"
    rare = {tag: n for tag, n in uses.items() if n < MIN_USES}
    assert not rare, f"constructs in fewer than {MIN_USES} programs: {rare}"


# -- running the runnable subset against the scripted model ------------------------------------


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """A chat server (started once for the module) and a config whose every role answers from
    it; :func:`test_random_programs_compile_validate_and_run` scripts it per program."""
    server = ChatServer().start()
    directory = tmp_path_factory.mktemp("prop")
    config = load_config(server.write_config(directory), env={"SCRIPTED_API_KEY": TEST_API_KEY})
    try:
        yield server, config, directory
    finally:
        server.stop()


def _catalog() -> Catalog:
    cat = Catalog()
    for name, fn in catalog_functions().items():
        cat.register_function(name, fn)
    return cat


@st.composite
def runnable(draw):
    return draw_program(DrawSource(draw), mode="run")


@st.composite
def inputs(draw):
    return draw_input(DrawSource(draw))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(runnable(), inputs())
def test_random_programs_compile_validate_and_run(scripted, program, inp):
    server, config, directory = scripted
    try:
        compiled = api.compile_source(program.source, "prop.flow")  # check, lower, load (validate)
    except api.CompileError as e:
        raise AssertionError(
            "generator produced an ill-typed program:\n"
            + program.source
            + "\n"
            + str(e.diagnostics)
        ) from None
    assert dropped(program, compiled.plan) == [], program.source
    # deterministic: lowering the same checked program again gives the same plan
    again = lower(compiled.check, file="prop.flow", source=program.source)
    assert json.dumps(again) == json.dumps(compiled.plan)
    plan = load_plan_text(compiled.to_yaml(), "prop.plan.yaml")  # the YAML round trip loads

    def reply(request):
        value = program.reply(request)
        return text(value) if isinstance(value, str) else answer(value)

    server.script(reply)
    inp = program.input_for(inp)
    expected = program.evaluate(inp)
    run = api.run_sync(
        plan,
        inp,
        catalog=_catalog(),
        config=config,
        workspace=directory,
        shape_cache=False,
    )
    if expected[0] == "ok":
        assert run.status == "ok", (program.source, inp, run.error)
        assert run.output == expected[1], (program.source, inp)
    else:
        assert run.status == "error", (program.source, inp, expected)
        assert (run.error["code"], run.error["message"]) == expected[1:], (program.source, inp)
