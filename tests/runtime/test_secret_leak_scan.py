"""No configured secret reaches any output (issue 16): every error path that can carry an API key
or a ``${VAR}`` value given to an MCP server is provoked through ``flowc run --json --trace
--record`` with a distinctive key, and stdout, stderr, the trace and the cassette are scanned
for any run of 8 characters of it. Also the redaction layer itself
(:mod:`agentflow.core.redaction`)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.chat_server import anthropic_error, status, text, tool_calls

from agentflow.cli import main
from agentflow.core.redaction import MIN_RUN, RedactingStream, Secrets

#: A distinctive key (not registered by any other test).
KEY = "sk-LEAKSCAN-7f3Qz9Lm2Vx8Rt4Wp6Ny1Bc5Hd0Kg-end"
RUNS = [KEY[i : i + MIN_RUN] for i in range(len(KEY) - MIN_RUN + 1)]


def leaks(haystack: str) -> list[str]:
    """The 8-character runs of KEY found in ``haystack``."""
    return [run for run in RUNS if run in haystack]


PLAN = """
version: 1
name: leak
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: Do the thing
      output_schema:
        type: object
        properties: {note: {type: string}}
        required: [note]
        additionalProperties: false
      tools: %s
      max_iterations: 3
"""

BURIED = "x" * 240 + " Incorrect API key provided: " + KEY  # the key straddles the 300 cut


def _openai_config(url: str, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        [models]
        default = "p:m"
        [providers.p]
        kind = "openai"
        base_url = "{url}"
        api_key_env = "LEAK_KEY"
        max_retries = 2
        backoff_base = 0.01
        backoff_max = 0.02
        """
    ) + textwrap.dedent(extra)


def _anthropic_config(url: str) -> str:
    return (
        _openai_config(url)
        .replace('kind = "openai"', 'kind = "anthropic"')
        .replace(url, url.removesuffix("/v1"))
    )


MCP_DIES_PRINTING = (
    "import os, sys\n"
    "sys.stderr.write('starting with token ' + os.environ['TOKEN'] + '\\n')\n"
    "sys.stderr.write('Authorization: Bearer ' + os.environ['TOKEN'][3:] + '\\n')\n"
    "sys.exit(3)\n"
)

USER_TOOL = (
    "import os\n\n"
    "def check_token(name: str) -> str:\n"
    "    '''Check a token.'''\n"
    "    raise ValueError('token rejected: ' + os.environ['LEAK_KEY'] + ' for ' + name)\n"
)

SCENARIOS = {
    "provider 401 echoing the key past the length cap": (
        [status(401, {"error": {"message": BURIED, "type": "invalid_request_error"}})],
        "null",
        "",
    ),
    "provider 500s echoing the key, retried": (
        [status(500, {"error": {"message": f"boom {KEY}", "type": "server_error"}})] * 3,
        "null",
        "",
    ),
    "provider 429 with the key in plain text": (
        [status(429, f"rate limited for key {KEY[:30]}", {"Retry-After": "0"})] * 3,
        "null",
        "",
    ),
    "malformed 200 reply carrying the key": (
        [{"choices": [{"message": {"content": 12, "leak": KEY}}], "key": KEY}] * 3,
        "null",
        "",
    ),
    "model answers with the key": ([text(json.dumps({"note": f"the key is {KEY}"}))], "null", ""),
    "model answers a wrong shape quoting the key": (
        [text(json.dumps({"other": KEY}))] * 4,
        "null",
        "",
    ),
    "model passes the key as tool arguments": (
        [
            tool_calls(("builtin__read_file", {"path": f"{KEY}.txt"})),
            text(json.dumps({"note": "done"})),
        ],
        '["builtin__read_file"]',
        "",
    ),
    "user tool raises with the key": (
        [tool_calls(("user__check_token", {"name": "n"})), text(json.dumps({"note": "x"}))],
        '["user__check_token"]',
        '[tools]\nmodules = ["leaky_tools.py"]\nentry_points = false\n',
    ),
    "MCP server prints the ${VAR} value on stderr and dies": (
        [text(json.dumps({"note": "x"}))],
        '["srv__*"]',
        "[mcp.srv]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["DIR/dies.py"]\n'
        'env = { TOKEN = "${LEAK_KEY}" }\n'
        "connect_timeout = 10\n",
    ),
}


def _run(tmp_path: Path, chat_server, config_text: str, tools: str, key: str = KEY):
    (tmp_path / "plan.yaml").write_text(PLAN % tools)
    (tmp_path / "flow.toml").write_text(config_text.replace("DIR/", f"{tmp_path}/"))
    (tmp_path / "dies.py").write_text(MCP_DIES_PRINTING)
    (tmp_path / "leaky_tools.py").write_text(USER_TOOL)
    trace, cassette = tmp_path / "trace.jsonl", tmp_path / "run.cassette.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(tmp_path / "plan.yaml"),
            "--config",
            str(tmp_path / "flow.toml"),
            "--workspace",
            str(tmp_path),
            "--json",
            "--trace",
            str(trace),
            "--record",
            str(cassette),
        ],
        env={"LEAK_KEY": key},
    )
    outputs = {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "trace": trace.read_text() if trace.exists() else "",
        "cassette": cassette.read_text() if cassette.exists() else "",
    }
    return result, outputs


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_run_of_the_key_in_any_output(tmp_path, chat_server, scenario):
    script, tools, extra = SCENARIOS[scenario]
    chat_server.script(script)
    result, outputs = _run(tmp_path, chat_server, _openai_config(chat_server.url, extra), tools)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in outputs["stderr"]
    if chat_server.requests:  # the key was sent (the MCP scenario fails before any request)
        assert any(KEY in h.get("Authorization", "") for h in chat_server.headers)
    found = {name: leaks(text) for name, text in outputs.items() if leaks(text)}
    assert found == {}, found
    # the trace stays valid JSON Lines and the run is reported
    for line in outputs["trace"].splitlines():
        json.loads(line)
    assert json.loads(outputs["stdout"])["status"] in ("ok", "error")


def test_the_mcp_stderr_is_shown_redacted(tmp_path, chat_server):
    script, tools, extra = SCENARIOS["MCP server prints the ${VAR} value on stderr and dies"]
    chat_server.script(script)
    _, outputs = _run(tmp_path, chat_server, _openai_config(chat_server.url, extra), tools)
    assert "starting with token ***" in outputs["stderr"] + outputs["stdout"]


def test_anthropic_error_echoing_the_key(tmp_path, chat_server):
    chat_server.script([anthropic_error(401, f"invalid x-api-key {KEY}")])
    result, outputs = _run(tmp_path, chat_server, _anthropic_config(chat_server.url), "null")
    assert result.exit_code == 1
    found = {name: leaks(text) for name, text in outputs.items() if leaks(text)}
    assert found == {}, found


def test_a_key_that_cannot_travel_is_named_not_shown(tmp_path, chat_server):
    result, outputs = _run(
        tmp_path, chat_server, _openai_config(chat_server.url), "null", key=KEY + "\n"
    )
    assert result.exit_code == 1 and "$LEAK_KEY" in outputs["stderr"]
    assert {name: leaks(text) for name, text in outputs.items() if leaks(text)} == {}


# --------------------------------------------------------------------------- the layer


def test_every_run_of_eight_characters_is_removed_and_shorter_ones_stay():
    secrets = Secrets()
    secrets.add(KEY)
    assert secrets.redact(f"a {KEY} b") == "a *** b"
    assert secrets.redact(KEY[:35] + "…") == "***…"
    assert secrets.redact(f"[{KEY[10:18]}]") == "[***]"
    assert secrets.redact(f"[{KEY[10:17]}]") == f"[{KEY[10:17]}]"  # 7 characters: not a run
    mixed = f"{KEY[:12]} and then {KEY[-9:]}"
    assert leaks(secrets.redact(mixed)) == []


def test_a_word_that_is_part_of_a_placeholder_key_is_kept_and_the_key_is_not():
    """llama.cpp's conventional key `sk-no-key-required` holds the word `required`: text that
    says "required" keeps it (a durable record stores it, a reused run reads the same), while
    the key, a part of it with a sign, digit or mixed case, and a long part are removed."""
    secrets = Secrets()
    secrets.add("sk-no-key-required")
    secrets.add(KEY)
    assert secrets.redact("the field title is required") == "the field title is required"
    assert secrets.redact("REQUIRED") == "REQUIRED"
    assert secrets.redact("use sk-no-key-required; key-required") == "use ***; ***"
    # a word of one case alone, even one the key holds (`LEAKSCAN`), is a word; beside the
    # signs it has in the key, or with the key's digits and mixed case, it is the key's
    assert secrets.redact(f"[{KEY[3:11]}]") == f"[{KEY[3:11]}]"
    assert secrets.redact(f"[{KEY[2:12]}]") == "[***]"  # `-LEAKSCAN-`
    assert secrets.redact(f"[{KEY[12:20]}]") == "[***]"  # `7f3Qz9Lm`


def test_json_escaped_and_structured_forms():
    secrets = Secrets()
    odd = 'pa"ss\\word-with-quote'
    secrets.add(odd)
    assert odd[:8] not in secrets.redact(json.dumps({"v": odd}))
    assert secrets.redact_data({"k": [odd, {odd: 1}], "n": 3}) == {"k": ["***", {"***": 1}], "n": 3}
    clean = {"k": ["fine"]}
    assert secrets.redact_data(clean) is clean


def test_short_words_and_tiny_values_are_not_secrets():
    secrets = Secrets()
    secrets.add("true")
    secrets.add("admin")  # a word: ASCII letters of one case, under 8 characters
    secrets.add("None")  # capitalised: a word too
    secrets.add("x1")  # under 4 characters
    assert not secrets
    assert secrets.redact("true admin None x1") == "true admin None x1"
    secrets.add("1234567")  # short, not a word: removed where it stands whole (round 42)
    assert secrets.redact("true 1234567 12345678") == "true *** 12345678"


def test_the_stream_wrapper_catches_a_key_split_across_writes():
    import io

    from agentflow.core import redaction

    sink = io.StringIO()
    stream = RedactingStream(sink)
    redaction.register_secret(KEY)
    stream.write("key: " + KEY[:20])
    stream.write(KEY[20:] + "\nnext")
    stream.flush()
    assert sink.getvalue() == "key: ***\nnext"


@pytest.mark.parametrize(
    ("table", "sent"),
    [
        ('kind = "azure-openai"\napi_key_env = "LEAK_KEY"\n', ("api-key", KEY)),
        ('kind = "azure-openai"\nentra_token_env = "LEAK_KEY"\n', ("Authorization", KEY)),
        (
            'kind = "openai"\nheaders = { "Helicone-Auth" = "Bearer ${LEAK_KEY}" }\n',
            ("Helicone-Auth", KEY),
        ),
    ],
    ids=["azure api-key", "azure entra token", "gateway header ${VAR}"],
)
def test_azure_credentials_and_header_values_never_reach_an_output(
    tmp_path, chat_server, table, sent
):
    # the provider echoes the credential back in its errors, retried, then failing the run
    chat_server.script([status(500, {"error": {"message": f"bad credential {KEY}"}})] * 3)
    url = chat_server.url if 'kind = "openai"' in table else chat_server.url.removesuffix("/v1")
    config = (
        f'[models]\ndefault = "p:m"\n[providers.p]\nbase_url = "{url}"\n{table}'
        "max_retries = 2\nbackoff_base = 0.01\nbackoff_max = 0.02\n"
    )
    result, outputs = _run(tmp_path, chat_server, config, "null")
    assert result.exit_code == 1 and "Traceback" not in outputs["stderr"]
    header, value = sent
    assert value in chat_server.headers[0][header]
    found = {name: leaks(text) for name, text in outputs.items() if leaks(text)}
    assert found == {}, found


#: A password and a key written into a provider's base_url (not registered by any other test).
URL_PASSWORD = "pw-URLSCAN-4Jd8Qx2Mv7"
URL_KEY = "qk-URLSCAN-9Tz1Hc6Wr3"


@pytest.mark.parametrize("durable", [False, True], ids=["plain", "durable"])
def test_a_password_in_base_url_reaches_no_output(tmp_path, durable):
    # port 9 is closed: the error names the URL it could not reach, with its password and
    # its credential-named query value shown as ***; nothing of either in any output
    url = f"http://bob:{URL_PASSWORD}@127.0.0.1:9/v1?api-key={URL_KEY}"
    config = _openai_config(url).replace("max_retries = 2", "max_retries = 0")
    (tmp_path / "plan.yaml").write_text(PLAN % "null")
    (tmp_path / "flow.toml").write_text(config)
    trace = tmp_path / "trace.jsonl"
    args = ["run", str(tmp_path / "plan.yaml"), "--config", str(tmp_path / "flow.toml")]
    args += ["--workspace", str(tmp_path), "--json", "--trace", str(trace)]
    args += ["--durable"] if durable else []
    result = CliRunner().invoke(main, args, env={"LEAK_KEY": KEY})
    assert result.exit_code == 1, result.output
    outputs = {"stdout": result.stdout, "stderr": result.stderr, "trace": trace.read_text()}
    if durable:
        outputs["database"] = "".join(
            p.read_bytes().decode("latin-1") for p in (tmp_path / ".flowc").glob("durable.sqlite*")
        )
    for name, written in outputs.items():
        for secret in (URL_PASSWORD, URL_KEY):
            assert secret[:MIN_RUN] not in written and secret[-MIN_RUN:] not in written, name
    assert "http://bob:***@127.0.0.1:9/v1?api-key=***; the URL is from base_url" in result.stderr


def test_safe_url_hides_a_urls_credentials_only():
    from agentflow.core.redaction import safe_url, url_credentials

    assert safe_url("http://u:p4ss@h:1/v1?api-key=k1&x=2") == "http://u:***@h:1/v1?api-key=***&x=2"
    assert safe_url("https://h/v1?sig=abc&token=t#f") == "https://h/v1?sig=***&token=***#f"
    assert safe_url("postgresql://u@h/db?password=x") == "postgresql://u@h/db?password=***"
    assert safe_url("http://h/v1?monkey=1") == "http://h/v1?monkey=1"  # a name, not a key
    assert url_credentials("http://tok123@h/") == ["tok123"]  # a lone user part is a token
    assert url_credentials("http://h/v1") == []
