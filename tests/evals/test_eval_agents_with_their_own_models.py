"""`flowc eval` asks for a model as `flowc run` does (model_needs.plan_model_refusal): every agent
the flow uses naming its own `[agents.NAME] model` is enough without `[models] default` or
`chat`; an agent with none is named in the refusal, and a `judge` scorer still needs the
`chat` model (docs/reference/configuration.md "Environment variables")."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main

FLOW = (
    'input { n: int }\nuse agent "a" as a\n'
    'stage d -> int { return agent(a) { task "double ${input.n}" expect int } }\n'
    'eval "e" {\n  expect int\n  score ok = d == expected\nJUDGE}\n'
)
OWN_MODEL = '[providers.p]\nkind = "test"\n[agents.a]\nmodel = "p:m"\n'


def _eval(tmp_path, monkeypatch, *, toml: str | None, judge: str = "") -> tuple[int, str]:
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.flow").write_text(FLOW.replace("JUDGE", judge), encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"input": {"n": 1}, "expected": 2}\n')
    if toml is not None:
        (tmp_path / "flow.toml").write_text(toml, encoding="utf-8")
    res = CliRunner().invoke(main, ["eval", "g.flow", "cases.jsonl", "--no-cache"])
    return res.exit_code, res.output


def test_an_eval_runs_when_every_agent_names_its_own_model(tmp_path, monkeypatch):
    code, out = _eval(tmp_path, monkeypatch, toml=OWN_MODEL)
    assert "no model is configured" not in out, out
    assert code == 0 and 'eval "e" of g.flow: 1 case run(s)' in out, out


def test_an_eval_names_the_agent_with_no_model_as_run_does(tmp_path, monkeypatch):
    code, out = _eval(tmp_path, monkeypatch, toml='[providers.p]\nkind = "test"\n')
    assert code == 1
    assert 'no model is configured for agent "a" (`use agent "a"`)' in out
    assert "set [agents.a] model in flow.toml, or [models] default for every agent" in out


def test_a_judge_scorer_still_needs_the_chat_model(tmp_path, monkeypatch):
    code, out = _eval(tmp_path, monkeypatch, toml=OWN_MODEL, judge='  judge sure "Is ${d} sure?"\n')
    assert code == 1
    assert "no model is configured: set [models] chat (or [models] default)" in out, out
