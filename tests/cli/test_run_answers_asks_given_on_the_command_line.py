"""``flowc run --answer NAME=VALUE`` answers a plain run's ``ask`` with no terminal (a pipe,
CI), NAME as ``flowc answer`` takes it (docs/reference/cli.md "flowc run --answer"); an ask
left to its default says its question on its progress line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
flow approve
input { subject: text }

stage approve -> bool {
  let ok = ask "Send the reply about ${input.subject}?" expect bool default false
  return ok
}
"""


def _run(tmp_path, monkeypatch, *more: str):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "approve.flow").write_text(FLOW)
    args = ["run", "approve.flow", "--input", '{"subject": "x"}', *more]
    return CliRunner().invoke(main, args, input="yes\n")


def test_an_answer_given_with_answer_is_taken_and_piped_stdin_is_not(tmp_path, monkeypatch):
    given = _run(tmp_path, monkeypatch, "--answer", "ok=yes")
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout) is True
    assert "· answered true" in given.stderr
    left = _run(tmp_path, monkeypatch)
    assert json.loads(left.stdout) is False
    assert '· no answer to "Send the reply about x?": the default false' in left.stderr


def test_an_answer_option_without_a_name_and_value_is_a_usage_error(tmp_path, monkeypatch):
    bad = _run(tmp_path, monkeypatch, "--answer", "ok")
    assert bad.exit_code == 2
    assert "'ok': give NAME=VALUE" in bad.stderr


def test_answer_with_a_durable_run_is_refused_before_it_starts(tmp_path, monkeypatch):
    durable = _run(tmp_path, monkeypatch, "--durable", "--answer", "ok=yes")
    assert durable.exit_code == 1
    assert "a durable run's questions wait for `flowc answer RUN NAME VALUE`" in durable.stderr
    assert not (tmp_path / ".flowc").exists()


MAP = """\
input { items: text[] }
stage s -> bool[] {
  parallel map input.items as it limit 2 {
    let ok = ask "Ship ${it}?" expect bool default false
    return ok
  }
}
"""


def test_one_ask_of_a_map_is_answered_as_flowc_answer_names_it(tmp_path, monkeypatch):
    # `ok[1]`, the label and the step path answer item 1's ask alone; `ok` every item's; a
    # misspelt let is refused before the run (final battery: `ok[0]` was refused)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "m.flow").write_text(MAP)
    for name, want in [
        ("ok[1]", [False, True]),
        ("s › item 0 › ok", [True, False]),
        ("E0/do.1", [False, True]),
        ("ok", [True, True]),
    ]:
        args = ["run", "m.flow", "--input", '{"items": ["a", "b"]}', "--answer", f"{name}=true"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0 and json.loads(out.stdout) == want, (name, out.output)
    bad = CliRunner().invoke(main, ["run", "m.flow", "--input", '{"items": ["a"]}', "--answer", "okk[0]=true"])  # fmt: skip
    assert bad.exit_code == 1 and "no `ask` of the flow is named so" in bad.stderr, bad.output


NESTED = """\
input { items: text[] }
stage s -> bool[] {
  map input.items as it {
    let r = loop up to 2 as i, acc = false {
      let ok = ask "Ship ${it} ${i}?" expect bool default false
      ok
    }
    r
  }
}
stage t -> bool[] {
  let top = ask "Go?" expect bool default false
  s
}
"""


def _answered(tmp_path, monkeypatch, flow: str, items: str, *answers: str):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "m.flow").write_text(flow)
    args = ["run", "m.flow", "--input", f'{{"items": {items}}}']
    for one in answers:
        args += [one] if one.startswith("--") else ["--answer", one]
    return CliRunner().invoke(main, args)


def test_an_index_whose_depth_is_not_its_asks_nesting_is_refused_before_the_run(
    tmp_path, monkeypatch
):
    # one index per map or loop the ask is asked in: `ok[1][2]` of a map's ask, `ok[0]` of an
    # ask in a loop in a map, `top[0]` of an ask asked once — each refused, nothing run
    for flow, name, said in [
        (MAP, "ok[1][2]", "is asked in a map or loop, an index each: answer it as 'ok[N]'"),
        (
            NESTED,
            "ok[0]",
            "is asked in 2 nested maps or loops, an index each: answer it as 'ok[N][N]'",
        ),  # fmt: skip
        (NESTED, "top[0]", "is asked once, not in a map or a loop: answer it as 'top'"),
    ]:
        out = _answered(tmp_path, monkeypatch, flow, '["a"]', f"{name}=yes")
        assert out.exit_code == 1, (name, out.output)
        assert out.stderr.splitlines() == [f"error: answer for {name!r}: the ask of `let {name.split('[')[0]}` {said}"], out.stderr  # fmt: skip
    nested = _answered(tmp_path, monkeypatch, NESTED, '["a"]', "ok[0][2]=yes")
    assert nested.exit_code == 0 and json.loads(nested.stdout) == [True], nested.output


def test_an_answer_no_question_took_is_reported_at_the_end_of_the_run(tmp_path, monkeypatch):
    # an index past the items is known only as the run goes: the run takes its defaults and
    # says, on stderr and in --json, which answers it never used
    for name in ("ok[5]", "ok[99999999999999999999]"):
        out = _answered(tmp_path, monkeypatch, MAP, '["a", "b"]', f"{name}=yes", "ok[1]=yes")
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout) == [False, True]
        assert out.stderr.splitlines()[-1] == (
            f"warning: --answer {name} answered no question of the run (an index past the "
            "items or rounds the run had, or an ask it did not reach)"
        )
        assert "ok[1] answered" not in out.stderr
    whole = _answered(tmp_path, monkeypatch, MAP, '["a"]', "ok[3]=yes", "--json")
    assert json.loads(whole.stdout)["unused_answers"] == ["ok[3]"]
    used = _answered(tmp_path, monkeypatch, MAP, '["a"]', "ok=yes", "--json")
    assert "unused_answers" not in json.loads(used.stdout)


def test_the_same_name_answered_twice_is_a_usage_error_naming_both(tmp_path, monkeypatch):
    twice = _answered(tmp_path, monkeypatch, MAP, '["a"]', "ok=yes", "ok=no")
    assert twice.exit_code == 2
    assert "ok is answered twice, ok=yes and ok=no: give one --answer ok" in twice.stderr


CHOICE = """\
type Choice = "ship" | "hold"
stage approve -> Choice {
  let ok = ask "Ship or hold?" expect Choice
  return ok
}
"""


def test_an_answer_its_ask_refuses_is_refused_before_any_step_runs(tmp_path, monkeypatch):
    # the ask's type is in the plan: its message, the ask named as the `.flow` writes it
    bad = _run(tmp_path, monkeypatch, "--answer", "ok=maybe")
    assert bad.exit_code == 1
    assert bad.stderr == (
        'error: answer to `Send the reply about …?`: `answer` is "maybe", but the ask\'s type '
        "wants `bool` here; a yes/no question takes yes, no, true or false (or y, n) (the "
        "answer given for ok, to `approve › ok = ask` at approve.flow:5:12); nothing was run\n"
    )
    assert "▶" not in bad.stderr


def test_a_choice_is_answered_bare_as_a_json_string_or_by_its_number(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "c.flow").write_text(CHOICE)
    for value in ["hold", '"hold"', "2"]:
        out = CliRunner().invoke(main, ["run", "c.flow", "--answer", f"ok={value}"])
        assert out.exit_code == 0 and json.loads(out.stdout) == "hold", (value, out.output)
    past = CliRunner().invoke(main, ["run", "c.flow", "--answer", "ok=3"])
    assert past.exit_code == 1 and "▶" not in past.stderr
    assert '"3" is not one of "ship" | "hold"' in past.stderr


def test_answer_numbering_past_the_choices_says_they_are_numbered(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.flow").write_text(
        'stage s -> text {\n  let ok = ask "Ship it?" expect "ship" | "hold"\n  ok\n}\n'
    )
    out = CliRunner().invoke(main, ["run", "c.flow", "--answer", "ok=3"])
    assert out.exit_code != 0
    assert "the choices are numbered 1–2" in out.stderr, out.output
    assert "nothing was run" in out.stderr
    taken = CliRunner().invoke(main, ["run", "c.flow", "--answer", "ok=2"])
    assert taken.exit_code == 0 and '"hold"' in taken.stdout, taken.output


PARALLEL = """\
stage s -> json {
  let both = parallel {
    a: ask "A?" expect int
    b: ask "B?" expect int
  }
  return both
}
"""


def test_a_parallel_branchs_ask_is_answered_and_named_by_its_branch(tmp_path, monkeypatch):
    # break14: `--answer a=5` was refused ("no `ask` of the flow is named so") although the
    # durable prompt says `flowc answer RUN a VALUE`, and the unanswered ask's error named the
    # compiled step path (`--answer E0/b=VALUE`)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "p.flow").write_text(PARALLEL)
    both = CliRunner().invoke(main, ["run", "p.flow", "--answer", "a=5", "--answer", "b=6"])
    assert both.exit_code == 0, both.output
    assert json.loads(both.stdout) == {"a": 5, "b": 6}
    label = CliRunner().invoke(
        main, ["run", "p.flow", "--answer", "s › parallel › a › ask=5", "--answer", "b=6"]
    )  # its label as the progress prints it, as `flowc answer` takes it
    assert label.exit_code == 0 and json.loads(label.stdout) == {"a": 5, "b": 6}, label.output
    one = CliRunner().invoke(main, ["run", "p.flow", "--answer", "a=5"])
    assert one.exit_code == 1
    assert "answer it with `--answer b=VALUE`" in one.stderr
    assert "E0/b=VALUE" not in one.stderr


WRITE = """\
stage s -> json {
  let t = ask "T?"
  let w = write_file(path: "o.txt", content: t)
  return { t: t, w: w }
}
"""


def test_an_answer_with_bytes_that_are_not_utf8_takes_them_as_replacement_characters(tmp_path):
    # break14: `--answer $'t=\\xffx'` kept Python's surrogate escape ("\\udcffx"), shown so, and
    # the run failed in write_file with a UnicodeEncodeError; `--input` and `flowc answer` make
    # such bytes U+FFFD
    (tmp_path / "w.flow").write_text(WRITE)
    argv = [os.fsencode(a) for a in [sys.executable, "-m", "agentflow", "run", "w.flow"]]
    done = subprocess.run(
        [*argv, b"--answer", b"t=\xffx"], cwd=tmp_path, capture_output=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert json.loads(done.stdout)["t"] == "\ufffdx"
    assert (tmp_path / "o.txt").read_text(encoding="utf-8") == "\ufffdx"


PARALLEL_IN_MAP = """\
input { xs: int[] }
stage s -> json {
  map input.xs as x {
    parallel {
      a: ask "A ${x}?" expect int
      b: 1
    }
  }
}
"""


def test_a_parallel_branchs_ask_in_a_map_is_named_by_its_branch_and_item(tmp_path, monkeypatch):
    # break14: `--answer 'a[1]=3'` was refused ("the ask of `let a` is asked once"), and the
    # unanswered ask named its compiled path (`--answer E0/do.0/E0/a=VALUE`)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "m.flow").write_text(PARALLEL_IN_MAP)
    run = ["run", "m.flow", "--input", '{"xs": [1, 2]}']
    each = CliRunner().invoke(main, [*run, "--answer", "a[1]=3", "--answer", "a[0]=4"])
    assert each.exit_code == 0, each.output
    assert json.loads(each.stdout) == [{"a": 4, "b": 1}, {"a": 3, "b": 1}]
    every = CliRunner().invoke(main, [*run, "--answer", "a=7"])
    assert json.loads(every.stdout) == [{"a": 7, "b": 1}, {"a": 7, "b": 1}], every.output
    left = CliRunner().invoke(main, run)
    assert left.exit_code == 1 and "answer it with `--answer a=VALUE`" in left.stderr


def test_round_zero_of_a_loop_is_refused_before_the_run_saying_rounds_count_from_1(
    tmp_path, monkeypatch
):
    # break14: `ok[0][0]` ran the whole flow, then warned "an index past the items or rounds"
    out = _answered(tmp_path, monkeypatch, NESTED, '["a"]', "ok[0][0]=yes")
    assert out.exit_code == 1, out.output
    assert out.stderr.splitlines() == [
        "error: answer for 'ok[0][0]': index 2 is a `loop`'s round, and rounds count from 1 "
        "(round 1 is the first)"
    ]
    first = _answered(tmp_path, monkeypatch, NESTED, '["a"]', "ok[0][1]=yes")
    assert first.exit_code == 0 and "answered true" in first.stderr, first.output


def test_an_unanswered_ask_of_one_map_item_shows_the_answer_for_that_item_alone(
    tmp_path, monkeypatch
):
    # `--answer p=VALUE` answers every item: the hint also gives `p[1]=VALUE`, this item's
    flow = (
        'flow m "asks in a map"\nstage s -> int[] {\n  let xs = [1, 2]\n  return map xs as x {\n'
        '    let p = ask "Go on with ${x}?" expect int\n    return p + x\n  }\n}\n'
    )
    out = _answered(tmp_path, monkeypatch, flow, "[]", "p[0]=1")
    assert out.exit_code == 1, out.output
    assert "`--answer p[1]=VALUE` answers this one alone, `p=VALUE` every one" in out.stderr
