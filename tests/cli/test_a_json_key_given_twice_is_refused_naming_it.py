"""JSON a person gives that names one key twice in an object — `--input` (text or @file), an
answer (`flowc answer`, `--answer NAME=VALUE`), an eval dataset (JSON Lines, JSON, YAML) — is
refused with a message naming the key; it was accepted silently, the last value winning.

Root cause: ``loads_value`` (runtime/extract.py), which reads every such value, used Python's
json defaults, whose objects keep the last of duplicate keys; a dataset's JSON/YAML document is
read by PyYAML, which does the same. ``loads_value`` now refuses them (``DuplicateKey``), and the
dataset reader looks for them in the YAML nodes (``duplicate-field`` at the second key).
``parse_json`` in a flow refuses it too, with ``parse_error`` naming the key (langleft14)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.errors import InputError
from agentflow.evals.dataset import read_dataset
from agentflow.runtime.extract import DuplicateKey, loads_value
from agentflow.runtime.hooks import checked_answer

TWICE = '{"a": 1, "a": 2}'


def _flowc(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.output


@pytest.mark.parametrize("text", [TWICE, '{"b": [{"a": 1, "a": 1}]}'])
def test_loads_value_refuses_a_key_given_twice_naming_it(text):
    with pytest.raises(DuplicateKey, match='the key "a" is given twice in one object'):
        loads_value(text)


def test_parse_json_in_a_flow_refuses_a_key_given_twice_with_parse_error_naming_it(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    raw = json.dumps({"raw": '{"b": {"a": 1, "a": 2}}'})
    flow = tmp_path / "p.flow"
    flow.write_text(
        "input { raw: text }\nstage s -> json { return parse_json(input.raw) }\n",
        encoding="utf-8",
    )
    code, out = _flowc("run", "p.flow", "--input", raw)
    assert code == 1, out
    assert 'parse_error: `parse_json(input.raw)`: ambiguous JSON, the key "a" is given twice' in out
    # catchable as every `parse_json` failure is, its message naming the key
    flow.write_text(
        "input { raw: text }\nstage t -> text {\n  return try { to_text(parse_json(input.raw)) }"
        " catch on [parse_error] as e { e.message }\n}\n",
        encoding="utf-8",
    )
    code, out = _flowc("run", "p.flow", "--input", raw)
    assert code == 0, out
    assert 'ambiguous JSON, the key \\"a\\" is given twice in one object' in out, out


@pytest.mark.parametrize("given", ["text", "file"])
def test_run_input_with_a_key_given_twice_is_refused(tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "i.flow").write_text(
        "input { a: int }\nstage s -> int { return input.a }\n", encoding="utf-8"
    )
    (tmp_path / "in.json").write_text(TWICE, encoding="utf-8")
    code, out = _flowc("run", "i.flow", "--input", TWICE if given == "text" else "@in.json")
    assert code == 1, out
    where = "--input" if given == "text" else "in.json"
    assert f'{where}: input is not valid JSON: the key "a" is given twice' in out, out


def test_an_answer_with_a_key_given_twice_is_refused():
    question = SimpleNamespace(
        question="Plan?",
        schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        choices=None,
    )
    with pytest.raises(InputError, match='answer to `Plan\\?`: the key "a" is given twice'):
        checked_answer(question, TWICE)
    assert checked_answer(question, '{"a": 2}') == {"a": 2}


def test_run_answer_option_with_a_key_given_twice_is_refused_before_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.flow").write_text(
        'type P { a: int }\nstage s -> P {\n  let p = ask "Plan?" expect P\n  return p\n}\n',
        encoding="utf-8",
    )
    code, out = _flowc("run", "q.flow", "--answer", f"p={TWICE}")
    assert code == 1, out
    assert 'the key "a" is given twice' in out, out
    assert "(the answer given for p, to `s › p = ask` at q.flow:3:11); nothing was run" in out, out


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("d.jsonl", '{"name": "a", "input": {"x": 1, "x": 2}}\n{"name": "b", "input": {}}\n', 1),
        ("d.json", '[\n{"name": "a",\n "input": {"x": 1, "x": 2}}]', 3),
        ("d.yaml", "- name: a\n  input: {x: 1, x: 2}\n", 2),
    ],
)
def test_a_dataset_case_with_a_key_given_twice_is_a_duplicate_field_error(
    tmp_path, name, text, where
):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    data = read_dataset(path, shown=name)
    found = [d for d in data.diagnostics if d.code == "duplicate-field"]
    assert len(found) == 1, data.diagnostics
    assert found[0].message == f"the key {json.dumps('x')} is given twice in one object"
    assert found[0].span.line == where and found[0].notes[0].message == "first here"
    assert "a" not in [c.name for c in data.cases]


def test_an_answer_typed_at_the_terminal_with_a_key_given_twice_is_asked_again(tmp_path):
    import io

    from agentflow import api
    from agentflow.runtime.hooks import Hooks, terminal_interlocutor

    flow = tmp_path / "q.flow"
    flow.write_text(
        'type P { a: int }\nstage s -> P {\n  let p = ask "Plan?" expect P\n  return p\n}\n',
        encoding="utf-8",
    )
    typed, shown = io.StringIO(TWICE + '\n{"a": 2}\n'), io.StringIO()
    result = api.run_sync(
        str(flow),
        None,
        hooks=Hooks(interlocutor=terminal_interlocutor(typed, shown)),
        workspace=tmp_path,
        shape_cache=False,
    )
    assert result.status == "ok" and result.output == {"a": 2}, result.error
    assert 'not accepted: the key "a" is given twice in one object' in shown.getvalue()
