"""`flowc plan fmt` keeps YAML comments (docs/spec/LANGUAGE.md §10, docs/spec/PLAN_IR.md §1;
docs/decisions.md "Plans").

Golden pairs live in ``tests/ir/fmt_plans/``: ``NAME.in.yaml`` is formatted and compared with
``NAME.out.yaml``. ``pytest --update-golden`` rewrites the ``.out`` files; review the diff before
committing.
"""

from __future__ import annotations

import glob
import random
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from support.paths import TESTS

from agentflow.cli import main
from agentflow.errors import PlanLoadError
from agentflow.ir.dump import _find_comments, dump_plan, fmt_plan_text, plan_to_data
from agentflow.ir.loader import load_plan_text

HERE = Path(__file__).parent
PAIRS = sorted((HERE / "fmt_plans").glob("*.in.yaml"))
COMPILED = sorted((TESTS / "compiler" / "compile").glob("*.plan.yaml"))


def _comments(text: str) -> list[str]:
    return [c.text for c in _find_comments(text)]


def _assert_keeps_everything(before: str, after: str) -> None:
    """Same plan, every comment still there, and formatting again changes nothing."""
    assert plan_to_data(load_plan_text(after)) == plan_to_data(load_plan_text(before))
    kept = "\n".join(_comments(after))
    for text in _comments(before):
        assert text in kept, f"lost comment {text!r}"
    assert fmt_plan_text(after) == after


# -- golden pairs ------------------------------------------------------------------------------


@pytest.mark.parametrize("src", PAIRS, ids=[p.name.removesuffix(".in.yaml") for p in PAIRS])
def test_formats_to_the_golden_output(src: Path, golden):
    expected = src.with_name(src.name.replace(".in.yaml", ".out.yaml"))
    out = fmt_plan_text(src.read_text(encoding="utf-8"), str(src))
    golden.check(expected, out)
    _assert_keeps_everything(src.read_text(encoding="utf-8"), out)


def test_there_are_golden_pairs():
    assert len(PAIRS) >= 4


# -- the rules, one by one ---------------------------------------------------------------------

BASIC = textwrap.dedent(
    """\
    # header
    name: t  # the name
    version: 1
    steps:
      # before the step
      - id: E0
        tool_name: value
        input:
          # before value
          value: "a # b"  # after value
    # footer
    """
)


def test_full_line_and_trailing_comments_stay_with_their_key():
    out = fmt_plan_text(BASIC)
    lines = out.splitlines()
    assert lines[0] == "# header"  # a comment before the first key stays at the top
    assert "name: t  # the name" in lines
    # a full-line comment goes right before its key/item, at that key's indentation
    i = lines.index("- id: E0")
    assert lines[i - 1] == "# before the step"
    j = lines.index("    value: 'a # b'  # after value")
    assert lines[j - 1] == "    # before value"
    assert lines[-1] == "# footer"  # a comment at the end stays at the end
    _assert_keeps_everything(BASIC, out)


def test_hash_inside_scalars_is_not_a_comment():
    text = textwrap.dedent(
        """\
        name: t
        steps:
          - id: E0
            tool_name: value
            input:
              value:
                q1: "x # y"
                q2: 'x # y'
                block: |
                  line # one
                  # line two
                folded: >
                  a # b
                tmpl: "{{ input.n }} # not a comment"
                plain: a#b
        """
    )
    assert _comments(text) == []
    out = fmt_plan_text(text)
    assert out == dump_plan(plan_to_data(load_plan_text(text)))
    value = load_plan_text(out).steps[0].input["value"]
    assert value == {
        "q1": "x # y",
        "q2": "x # y",
        "block": "line # one\n# line two\n",
        "folded": "a # b\n",
        "tmpl": "{{ input.n }} # not a comment",
        "plain": "a#b",
    }


def test_block_scalar_header_comment_is_kept_on_the_header():
    text = "name: t\ndescription: |-  # about the text\n  two\n  lines\nsteps:\n  - {id: E0, tool_name: value, input: {value: 1}}\n"
    out = fmt_plan_text(text)
    assert "description: |-  # about the text\n  two\n  lines\n" in out
    _assert_keeps_everything(text, out)


def test_renamed_and_reordered_keys_carry_their_comments():
    text = textwrap.dedent(
        """\
        steps:
          - input:  # the input
              value: 1
            # what runs
            toolName: value  # camel
            id: E0  # the id
        name: t  # named after the steps
        """
    )
    out = fmt_plan_text(text)
    assert out == textwrap.dedent(
        """\
        name: t  # named after the steps
        steps:
        - id: E0  # the id
          # what runs
          tool_name: value  # camel
          input:  # the input
            value: 1
        """
    )
    _assert_keeps_everything(text, out)


def test_comment_inside_a_flow_mapping_goes_to_the_nearest_key():
    text = (
        "name: t\nsteps:\n  - {id: E0, tool_name: value, input: {value: {a: 1, # x\n     b: 2}}}\n"
    )
    out = fmt_plan_text(text)
    assert "      a: 1  # x\n      b: 2\n" in out
    _assert_keeps_everything(text, out)


def test_blank_lines_around_comments_are_kept_once():
    text = "# top\n\n\nname: t\n\n\n# steps\n\nsteps:\n- {id: E0, tool_name: value, input: {value: 1}}\n\n# end\n"
    out = fmt_plan_text(text)
    assert out.startswith("# top\n\nname: t\n\n# steps\n\nsteps:\n")
    assert out.endswith("    value: 1\n\n# end\n")
    _assert_keeps_everything(text, out)


def test_no_blank_line_is_added_into_a_keep_block():
    text = textwrap.dedent(
        """\
        name: t
        steps:
        - id: E0
          tool_name: value
          input:
            value:
              a: |+
                kept

              # after

              b: 1
        finish:
          output: |+
            end

        # last
        """
    )
    out = fmt_plan_text(text)
    data = load_plan_text(out)
    assert data.steps[0].input["value"]["a"] == "kept\n\n"
    assert data.finish.output == "end\n\n"
    _assert_keeps_everything(text, out)


def test_crlf_and_byte_order_mark():
    text = "\ufeff# top\r\nname: t  # n\r\nsteps:\r\n# s\r\n- id: E0\r\n  tool_name: value\r\n  input: {value: 1}\r\n"
    out = fmt_plan_text(text)
    assert out.startswith("# top\nname: t  # n\nsteps:\n# s\n- id: E0\n")
    _assert_keeps_everything(text.lstrip("\ufeff"), out)


def test_plans_without_comments_format_exactly_as_dump_plan():
    for path in COMPILED:
        text = path.read_text(encoding="utf-8")
        assert fmt_plan_text(text, str(path)) == dump_plan(plan_to_data(load_plan_text(text)))


def test_an_invalid_plan_is_still_refused():
    with pytest.raises(PlanLoadError):
        fmt_plan_text("# a comment\nname: t\n")


# -- the command -------------------------------------------------------------------------------


def test_cli_fmt_keeps_comments_and_check_passes_after(tmp_path):
    path = tmp_path / "c.plan.yaml"
    path.write_text(BASIC.replace("tool_name: value", "toolName: value"))
    runner = CliRunner()
    res = runner.invoke(main, ["plan", "fmt", "--check", str(path)])
    assert res.exit_code == 1 and "would reformat" in res.output
    res = runner.invoke(main, ["plan", "fmt", str(path)])
    assert res.exit_code == 0, res.output
    text = path.read_text(encoding="utf-8")
    assert "toolName" not in text
    for comment in ("# header", "# the name", "# before the step", "# after value", "# footer"):
        assert comment in text
    res = runner.invoke(main, ["plan", "fmt", "--check", str(path)])
    assert res.exit_code == 0, res.output


# -- many shapes: compiled plans re-written by hand, with comments sprinkled in ----------------

CAMEL = {
    "tool_name": "toolName",
    "input_schema": "inputSchema",
    "system_prompt": "systemPrompt",
    "output_schema": "outputSchema",
    "max_iterations": "maxIterations",
}


def _hand_written(rng: random.Random, data, depth: int = 0):
    """The same data with keys shuffled and sometimes camelCase (as a person might write it)."""
    if isinstance(data, dict):
        items = list(data.items())
        if rng.random() < 0.5:
            rng.shuffle(items)
        return {
            (CAMEL.get(k, k) if rng.random() < 0.5 else k): _hand_written(rng, v, depth + 1)
            for k, v in items
        }
    if isinstance(data, list):
        return [_hand_written(rng, v, depth + 1) for v in data]
    return data


@pytest.mark.parametrize("seed", range(4))
def test_sprinkled_comments_are_kept_and_fmt_is_idempotent(seed):
    rng = random.Random(seed)
    files = sorted(glob.glob(str(TESTS / "compiler" / "compile" / "*.plan.yaml")))
    checked = 0
    for _ in range(10):
        data = yaml.safe_load(Path(rng.choice(files)).read_text(encoding="utf-8"))
        src = yaml.safe_dump(
            _hand_written(rng, data),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=rng.choice([False, None]),
            indent=rng.choice([2, 4]),
            width=rng.choice([60, 1000]),
        )
        lines = src.split("\n")
        for k in range(rng.randint(1, 8)):
            i = rng.randrange(len(lines))
            roll = rng.random()
            if roll < 0.5:
                lines[i] += rng.choice([f"  # t{k}", f" #t{k} é", f"\t# t{k}"])
            elif roll < 0.85:
                indent = len(lines[i]) - len(lines[i].lstrip(" "))
                lines.insert(i, " " * rng.choice([0, indent, indent + 2]) + f"# f{k}")
            else:
                lines.insert(i, "")
        text = "\n".join(lines)
        try:
            load_plan_text(text)
        except PlanLoadError:  # the sprinkling broke the YAML: not a formatter case
            continue
        _assert_keeps_everything(text, fmt_plan_text(text))
        checked += 1
    assert checked >= 6


def test_a_json_plan_is_formatted_as_json(tmp_path):
    f = tmp_path / "p.plan.json"
    f.write_text(
        '{"version": 1, "name": "t", "steps": [{"id": "a", "toolName": "value", '
        '"input": {"value": "é"}}]}',
        encoding="utf-8",
    )
    res = CliRunner().invoke(main, ["plan", "fmt", str(f)])
    assert res.exit_code == 0, res.output
    import json

    text = f.read_text(encoding="utf-8")
    data = json.loads(text)  # still JSON, not YAML written under a .json name
    assert data["steps"][0]["tool_name"] == "value" and "é" in text
    assert CliRunner().invoke(main, ["plan", "fmt", "--check", str(f)]).exit_code == 0


def test_a_json_plan_with_comments_is_left_alone():
    text = '# keep me\n{"version": 1, "name": "t", "steps": [{"id": "a", "tool_name": "value", "input": {"value": 1}}]}\n'
    with pytest.raises(PlanLoadError, match="JSON cannot keep"):
        fmt_plan_text(text, "p.plan.json")


def test_finish_and_retry_fields_get_the_canonical_order_too():
    text = (
        "version: 1\nname: t\nsteps:\n  - id: E0\n    tool_name: value\n    input: {value: 1}\n"
        "    retry: {on: [transient], attempts: 1, backoff: {max: 1s, initial: 1ms}}\n"
        'finish: {output: "{{ E0 }}", mode: output}\n'
    )
    out = fmt_plan_text(text, "p.plan.yaml")
    assert out.index("attempts:") < out.index("'on':") < out.index("backoff:")
    assert out.index("initial: 1ms") < out.index("max: 1s")
    assert out.index("mode: output") < out.index("output: '{{ E0 }}'")
    assert fmt_plan_text(out, "p.plan.yaml") == out
