"""A wrong value in `flow.toml` — a string where a number of seconds is expected, a number
where a string is, a table where a string is, a value out of its range, a provider kind spelt
nearly right — is reported in the file's own terms (docs/reference/configuration.md "Errors"):
the key as written (`[providers.p] timeout`), what is expected (with an example), what was
given (its TOML type and value), at the key's `flow.toml:line:col`, and never in pydantic's
words. The survey below walks every key the configuration takes, so a key added later is
covered too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from agentflow.errors import ConfigError
from agentflow.runtime.config import Config, load_config
from agentflow.runtime.provider_options import KIND_KEYS

#: what pydantic says and a user must never read
PYDANTIC = (
    "Input should",
    "validation error",
    "type=",
    "For further information visit",
    "errors.pydantic.dev",
    "input_value",
    "literal[",
    "function-after",
    "Value error",
)

#: the name a table of tables gets in the survey, by its key
NAMES = {
    "providers": "p",
    "named": "fast",
    "agents": "helper",
    "teams": "dev",
    "members": "lead",
    "mcp": "srv",
    "prices": '"gpt-4.1"',
}

REPO = Path(__file__).resolve().parents[2]


def _plain(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _keys(
    model: type[BaseModel], table: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], str, FieldInfo]]:
    """(the table a key is in, as written; the key; its field) for every key under ``model``."""
    for name, field in model.model_fields.items():
        if name == "path":
            continue
        yield table, name, field
        tp = _plain(field.annotation)
        if _is_model(tp):
            yield from _keys(tp, (*table, name))
        elif get_origin(tp) is dict and _is_model(get_args(tp)[1]):
            yield from _keys(get_args(tp)[1], (*table, name, NAMES[name]))


def _context(table: tuple[str, ...], key: str) -> str:
    """The lines a valid `flow.toml` needs before ``key`` can be written under ``[table]``
    (each table on the way that has required keys, then the header of ``table``)."""
    needs = {
        ("models", "named", "fast"): ['provider = "openai"', 'model = "m"'],
        ("models", "named", "fast", "price"): ["input = 1", "output = 1"],
        ("prices", '"gpt-4.1"'): ["input = 1", "output = 1"],
        ("teams", "dev"): ['main = "lead"'],
    }
    url_keys = ("url", "headers", "oauth")
    needs[("mcp", "srv")] = ['url = "https://h/mcp"'] if key in url_keys else ['command = "srv"']
    if table[:2] == ("mcp", "srv") and len(table) > 2:
        needs[("mcp", "srv")] = ['url = "https://h/mcp"']
    if table == ("providers", "p") and key in KIND_KEYS:
        needs[table] = [f'kind = "{KIND_KEYS[key][0]}"']
    out: list[str] = []
    for depth in range(1, len(table) + 1):
        prefix = table[:depth]
        lines = [line for line in needs.get(prefix, []) if not line.startswith(f"{key} ")]
        if prefix == table or (lines and prefix in needs):
            out.append(f"[{'.'.join(prefix)}]")
            out.extend(lines if prefix == table or depth < len(table) else [])
    return "\n".join(out) + ("\n" if out else "")


def _wrong(field: FieldInfo) -> list[tuple[str, str]]:
    """(a wrong TOML value for the key, how the message names what was given)."""
    tp = _plain(field.annotation)
    if tp is bool:
        return [('"yes"', 'the string "yes"'), ("1", "the integer 1")]
    if tp in (int, float):
        out = [('"30s"', 'the string "30s"'), ('"5"', 'the string "5"')]
        out.append(("true", "the boolean true"))
        low = next((m for m in field.metadata if hasattr(m, "ge") or hasattr(m, "gt")), None)
        if low is not None:
            out.append(("-1", "the integer -1"))
        return out
    if _is_model(tp) or get_origin(tp) is dict:
        return [('"x"', 'the string "x"'), ("7", "the integer 7")]
    if get_origin(tp) is list:
        return [('"x"', 'the string "x"'), ("{ a = 1 }", "a table { a = 1 }")]
    # a string, one of a set of strings, a model reference
    return [("7", "the integer 7"), ("{ a = 1 }", "a table { a = 1 }")]


def _written(table: tuple[str, ...], key: str) -> str:
    return f"[{'.'.join(table)}] {key}" if table else key


SURVEY = [
    pytest.param(table, key, value, given, id=f"{'.'.join((*table, key))}={value}")
    for table, key, field in _keys(Config, ())
    for value, given in _wrong(field)
]


@pytest.mark.parametrize(("table", "key", "value", "given"), SURVEY)
def test_every_key_given_a_wrong_value_names_it_what_it_wants_and_what_it_got(
    tmp_path: Path, table: tuple[str, ...], key: str, value: str, given: str
) -> None:
    text = _context(table, key) + f"{key} = {value}\n"
    file = tmp_path / "flow.toml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    message = str(info.value)
    line = text.count("\n")
    assert message.count("\n") == 0, message  # one problem, one line
    assert message.startswith(f"{file}:{line}:1: {_written(table, key)}"), (text, message)
    assert not any(p in message for p in PYDANTIC), message
    secret = key in (
        "headers",
        "env",
        "client_secret",
        "idp_client_secret",
        "private_key",
        "id_token",
    )
    if ": expected " in message:  # a type or range: what is wanted, and what was given
        shown = given if not secret else given.split(" ")[0].replace("the", "a")
        assert re.search(r": expected .+; got ", message), message
        if not secret:
            assert f"; got {given}" in message, message
        else:
            assert value not in message.split("; got ")[1] or value == "x", message
            assert shown.split(" ")[0] in ("a", "an"), message
    else:  # a value a validator of its own refuses says why, in its words
        assert message.startswith(f"{file}:{line}:1: {_written(table, key)}: "), message


def test_the_survey_reaches_every_key_of_the_reference() -> None:
    """Each key of the survey is one docs/reference/configuration.md documents (in code there:
    `` `timeout` ``, `` `[budget] inferences` ``, `` `[agents.NAME]` ``), so the two lists
    cannot drift apart unseen."""
    doc = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    code = " ".join(re.findall(r"`[^`\n]+`", doc))
    keys = {key for _, key, _ in _keys(Config, ())}
    missing = sorted(k for k in keys if not re.search(rf"[`\[. ]{re.escape(k)}[`\]. ]", code))
    assert missing == [], missing


def _load(tmp_path: Path, text: str) -> str:
    file = tmp_path / "flow.toml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    return str(info.value).replace(str(file), "flow.toml")


@pytest.mark.parametrize(
    ("kind", "meant"), [("opnai", "openai"), ("anthropics", "anthropic"), ("OpenAI", "openai")]
)
def test_a_provider_kind_spelt_nearly_right_is_offered_the_kind_meant(
    tmp_path: Path, kind: str, meant: str
) -> None:
    text = f'[models]\ndefault = "p:m"\n\n[providers.p]\nkind = "{kind}"\n'
    assert _load(tmp_path, text) == (
        f'flow.toml:5:1: [providers.p] kind: expected a provider kind; got the string "{kind}"; '
        f"did you mean '{meant}'?"
    )


def test_a_provider_kind_like_none_lists_the_kinds(tmp_path: Path) -> None:
    assert _load(tmp_path, '[providers.p]\nkind = "llama"\n') == (
        'flow.toml:2:1: [providers.p] kind: expected a provider kind ("openai", "anthropic", '
        '"test", "openai-responses", "gemini", "bedrock", "azure-openai" or '
        '"azure-openai-responses"); got the string "llama"'
    )


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("LM Studio", "http://127.0.0.1:1234/v1"),
        ("vLLM", "http://127.0.0.1:8000/v1"),
        ("openrouter", "https://openrouter.ai/api/v1"),
    ],
)
def test_a_provider_kind_naming_an_openai_compatible_server_says_to_write_openai(
    tmp_path: Path, kind: str, url: str
) -> None:
    # README names Ollama as the keyless way to try a flow: `kind = "ollama"` is the natural
    # guess, and the list of kinds alone does not say that "openai" is the one to write
    assert _load(tmp_path, f'[providers.p]\nkind = "{kind}"\n') == (
        f'flow.toml:2:1: [providers.p] kind: expected a provider kind; got the string "{kind}"; '
        f'{kind} serves OpenAI\'s chat-completions API: write kind = "openai" with '
        f'base_url = "{url}"'
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'timeout = "30s"',
            "[providers.p] timeout: expected a number of seconds (more than 0), e.g. "
            '`timeout = 120`; got the string "30s"',
        ),
        (
            'max_retries = "5"',
            "[providers.p] max_retries: expected an integer from 0 to 20, e.g. "
            '`max_retries = 4`; got the string "5"',
        ),
        (
            "max_retries = -1",
            "[providers.p] max_retries: expected an integer from 0 to 20, e.g. "
            "`max_retries = 4`; got the integer -1",
        ),
        (
            'base_url = { url = "http://127.0.0.1:11434/v1" }',
            "[providers.p] base_url: expected an http(s) URL, e.g. "
            '`base_url = "http://127.0.0.1:11434/v1"`; got a table { url = "http://127.0.0.1:11434/v1" }',
        ),
        (
            "timeout = inf",
            "[providers.p] timeout: expected a finite number of seconds (more than 0), e.g. "
            "`timeout = 120`; got the number inf",
        ),
    ],
)
def test_a_provider_value_of_the_wrong_type_says_what_was_meant(
    tmp_path: Path, line: str, message: str
) -> None:
    assert _load(tmp_path, f"[providers.p]\n{line}\n") == f"flow.toml:2:1: {message}"


def test_a_string_that_looks_like_a_number_is_still_a_string(tmp_path: Path) -> None:
    """TOML has types: `max_agent_iterations = "5"` is refused, not read as 5 (and `enabled =
    "yes"` is no boolean)."""
    assert _load(tmp_path, '[chat]\nmax_agent_iterations = "5"\n') == (
        "flow.toml:2:1: [chat] max_agent_iterations: expected an integer (1 or more), e.g. "
        '`max_agent_iterations = 10`; got the string "5"'
    )
    assert _load(tmp_path, '[telemetry]\nenabled = "yes"\n') == (
        "flow.toml:2:1: [telemetry] enabled: expected true or false, e.g. `enabled = true`; "
        'got the string "yes"'
    )


def test_an_item_of_an_array_and_a_key_of_an_inline_table_are_named_where_they_are(
    tmp_path: Path,
) -> None:
    assert _load(tmp_path, '[tools]\nmodules = ["tools.py", 3]\n') == (
        "flow.toml:2:1: [tools] modules (item 2): expected a string; got the integer 3"
    )
    assert _load(tmp_path, '[models]\ndefault = ["p:m", 1]\n') == (
        "flow.toml:2:1: [models] default (item 2): expected a model reference (a role, a "
        'named model or "provider:model"); got the integer 1'
    )
    text = '[teams.dev]\nmain = "lead"\nmembers = { lead = { model = 1 } }\n'
    assert _load(tmp_path, text) == (
        "flow.toml:3:22: [teams.dev.members.lead] model: expected a model reference (a role, a "
        'named model or "provider:model"), e.g. `model = "fast"`; got the integer 1'
    )
    text = '[prices."gpt-4.1"]\ninput = "cheap"\noutput = 1\n'
    assert _load(tmp_path, text) == (
        'flow.toml:2:1: [prices."gpt-4.1"] input: expected a number of US dollars per million '
        'tokens (0 or more), e.g. `input = 0.15`; got the string "cheap"'
    )


def test_a_header_value_of_the_wrong_type_is_not_shown(tmp_path: Path) -> None:
    """Header and environment values may be credentials: a wrong one is named by its type."""
    message = _load(tmp_path, "[providers.p]\nheaders = { Authorization = 123456789 }\n")
    assert message == (
        "flow.toml:2:13: [providers.p.headers] Authorization: expected a string; got an integer"
    )


def test_a_table_where_a_value_is_expected_and_the_reverse(tmp_path: Path) -> None:
    assert _load(tmp_path, 'tools = "tools.py"\n') == (
        "flow.toml:1:1: tools: expected a table, e.g. `[tools]` with its keys on the lines "
        'below it; got the string "tools.py"'
    )
    assert _load(tmp_path, "[providers]\np = 3\n") == (
        "flow.toml:2:1: [providers] p: expected a table, e.g. `[providers.p]` with its keys on "
        "the lines below it; got the integer 3"
    )


def test_a_long_value_is_trimmed(tmp_path: Path) -> None:
    message = _load(tmp_path, f'[providers.p]\ntimeout = "{"9" * 200}"\n')
    assert message.endswith('got the string "' + "9" * 38 + "…"), message


def test_several_wrong_values_are_each_reported_at_their_line(tmp_path: Path) -> None:
    text = '[providers.p]\ntimeout = "30s"\n\n[tools]\nisolation = 3\n'
    assert _load(tmp_path, text).splitlines() == [
        "flow.toml:2:1: [providers.p] timeout: expected a number of seconds (more than 0), "
        'e.g. `timeout = 120`; got the string "30s"',
        'flow.toml:5:1: [tools] isolation: expected "thread" or "process"; got the integer 3',
    ]


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        (
            '[teams.t.members.lead]\nsystem_prompt = "x"\n',
            "flow.toml:1:2: [teams.t] main: required, but missing",
        ),
        (
            '[teams.t]\nmain = "lead"\n[prices."gpt-4.1"]\ninput = 1.0\n',
            'flow.toml:3:2: [prices."gpt-4.1"] output: required, but missing',
        ),
    ],
)
def test_a_missing_key_is_said_at_its_table_in_the_files_terms(
    tmp_path: Path, toml: str, said: str
) -> None:
    """A required key that is missing is said at the table it belongs in (its header, or the
    first header inside it), as `[table] key`, never pydantic's dotted `teams.t.main`."""
    path = tmp_path / "flow.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert said in str(caught.value).replace(str(tmp_path) + "/", ""), str(caught.value)
