"""Every code example of the documentation (``docs/**/*.md`` and the README) is checked.

- A ```` ```flow ```` block is a whole program.  Without marks it must check *and compile*
  with no diagnostic at all, warnings included.  A block showing a mistake marks each expected
  diagnostic at the end of its line (``// error[type-mismatch]``, optionally ``: message``;
  see ``support/markdown.py``) and must produce exactly those, compiling it when it checks clean
  (``unsupported-construct`` comes from the compiler).
- A ```` ```yaml plan ```` block is a hand-written plan and must load and validate
  (``flowc plan validate`` without a configuration: structure, templates, conditions).
  ```` ```yaml plan compiled-from=NAME.flow ```` shows what ``flowc compile NAME.flow`` prints for
  the ```` ```flow ```` block just before it, and must be exactly that.
- A ```` ```toml flow.toml ```` block is a configuration and must load; a ```` ```toml
  flow.toml refused ```` block one that must not, with exactly the errors of the ```` ```text ````
  block after it (the file named ``flow.toml``).
- A ```` ```python runnable ```` block runs, from the repository root, in a fresh interpreter,
  with no model configured (its runs replay the shipped cassettes), and must exit 0.

Fragments that are not whole programs are written in other blocks (```` ```text ````).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.markdown import ROOT, Fence, all_fences, marks, source_name

from agentflow.api import CompileError, compile_source
from agentflow.compiler.api import check_source

FLOW = all_fences("flow")
PLANS = [f for f in all_fences("yaml") if "plan" in f.info[1:]]
CONFIGS = [f for f in all_fences("toml") if "flow.toml" in f.info[1:] and "refused" not in f.info]
REFUSED = [f for f in all_fences("toml") if f.info[1:] == ("flow.toml", "refused")]
SCRIPTS = [f for f in all_fences("python") if "runnable" in f.info[1:]]


def _diagnostics(example: Fence, directory: Path) -> tuple[list, set[tuple[int, str, str]]]:
    """Every diagnostic of the example: the checker's, then the compiler's when it checks clean
    (an example that imports, or is imported, as a file of ``directory``: ``source_name``)."""
    name = source_name(example, directory)
    diags = list(check_source(example.text, name).diagnostics)
    if not any(d.severity == "error" for d in diags):
        try:
            compile_source(example.text, name)
        except CompileError as e:
            diags += e.diagnostics
    return diags, {(d.span.line, d.severity, d.code) for d in diags}


def test_the_documentation_has_examples_of_each_kind():
    assert len(FLOW) >= 60 and PLANS and CONFIGS and SCRIPTS


@pytest.mark.parametrize("example", FLOW, ids=str)
def test_flow_example_gives_exactly_its_marked_diagnostics(example: Fence, tmp_path: Path):
    expected = marks(example.text)
    diags, actual = _diagnostics(example, tmp_path)
    want = {(line, sev, code) for line, sev, code, _ in expected}
    shown = "\n".join(
        f"  {d.span.line}:{d.span.column} {d.severity}[{d.code}]: {d.message}" for d in diags
    )
    assert actual == want, (
        f"{example}: the example gives\n{shown or '  nothing'}\nbut its marks say {sorted(want)} "
        f"(line numbers count from the block's first line, {example})"
    )
    for line, sev, code, message in expected:
        if message is None:
            continue
        messages = [
            d.message for d in diags if (d.span.line, d.severity, d.code) == (line, sev, code)
        ]
        assert message in messages, f"{example}: line {line} {code}: messages are {messages}"


@pytest.mark.parametrize("example", PLANS, ids=str)
def test_plan_example_loads_and_validates(example: Fence):
    from agentflow.ir.loader import load_plan_text

    plan = load_plan_text(example.text, f"{example.file}:{example.line}")
    assert plan.steps


COMPILED = [
    (f, name.removeprefix("compiled-from="))
    for f in PLANS
    for name in f.info[2:]
    if name.startswith("compiled-from=")
]


@pytest.mark.parametrize("example, name", COMPILED, ids=lambda x: str(x))
def test_compiled_plan_example_is_what_flowc_compile_prints(example: Fence, name: str):
    source = [f for f in FLOW if f.file == example.file and f.line < example.line][
        -1
    ]  # the flow example just before it
    compiled = compile_source(source.text, name).to_yaml()
    assert example.text == compiled, f"{example}: flowc compile {name} prints\n{compiled}"


@pytest.mark.parametrize("example", CONFIGS, ids=str)
def test_flow_toml_example_loads(example: Fence, tmp_path):
    from agentflow.runtime.config import load_config

    path = tmp_path / "flow.toml"
    path.write_text(example.text, encoding="utf-8")
    config = load_config(path, env={})
    assert config.path == path


@pytest.mark.parametrize("example", REFUSED, ids=str)
def test_refused_flow_toml_example_gives_the_errors_shown(example: Fence, tmp_path):
    from agentflow.errors import ConfigError
    from agentflow.runtime.config import load_config

    shown = [f for f in all_fences("text") if f.file == example.file and f.line > example.line]
    path = tmp_path / "flow.toml"
    path.write_text(example.text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value).replace(str(path), "flow.toml") + "\n" == shown[0].text, example


@pytest.mark.parametrize("example", SCRIPTS, ids=str)
def test_python_example_runs(example: Fence):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_")) and k != "PYTHONPATH"
    }
    proc = subprocess.run(
        [sys.executable, "-c", example.text],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"{example}:\n{proc.stderr[-3000:]}"
