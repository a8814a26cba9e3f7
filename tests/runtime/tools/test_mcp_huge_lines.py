"""A stdio MCP server's answer of one huge line (runtime/tools/mcp_lines.py): read in linear
time — the SDK's reader is handed whole lines, so its ``buffer + chunk`` never copies a growing
line (5 MB took 1.4 s, 20 MB 28 s: bench/mcp_huge_line.py) — and bounded: a line over the limit
fails the one call it answers (``tool_error`` naming its size and the limit), whichever end of
the answer its ``id`` is written at, and the server answers the next call.  Real stdio servers
(tests/support/raw_mcp_server.py) on pipes; the SDK internals reached into are pinned here."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import anyio
import pytest

from agentflow.errors import RunError
from agentflow.runtime.config import load_config
from agentflow.runtime.tools import mcp_lines
from agentflow.runtime.tools.build import build_catalog
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.tools.mcp_lines import LineChunks

RAW = Path(__file__).resolve().parent.parent.parent / "support" / "raw_mcp_server.py"


def test_the_sdk_reads_stdout_through_the_class_we_replace() -> None:
    """Pinned: ``stdio_client`` builds its module global ``TextReceiveStream`` on the server's
    stdout with ``encoding`` / ``errors`` and splits ``buffer + chunk`` at newlines (whole-line
    chunks keep that linear); :func:`mcp_lines.install` replaces that global."""
    import mcp.client.stdio as sdk_stdio

    source = inspect.getsource(sdk_stdio.stdio_client)
    assert "TextReceiveStream(process.stdout, encoding=" in source
    assert "errors=" in source and '(buffer + chunk).split("\\n")' in source
    mcp_lines.install()
    assert sdk_stdio.TextReceiveStream is LineChunks


class _Chunks:
    """A byte stream that gives ``chunks`` one at a time, then ends (anyio's contract)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    async def receive(self) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)


async def _read(chunks: list[bytes], limit: int | None = None) -> list[str]:
    reader = LineChunks(_Chunks(chunks), encoding="utf-8", errors="replace")
    if limit is not None:
        reader.limit = limit
    return [text async for text in reader]


async def test_a_line_in_many_chunks_reaches_the_sdk_as_one() -> None:
    line = '{"jsonrpc": "2.0", "id": 1, "result": "' + "é" * 50_000 + '"}'
    data = (line + "\n" + '{"id": 2}\n').encode()
    pieces = [data[i : i + 1000] for i in range(0, len(data), 1000)]  # splits "é" too
    out = await _read(pieces)
    # whole lines only: the 100 kB line in one chunk (with the line its last piece ends too)
    assert out == [line + "\n" + '{"id": 2}\n'], [len(t) for t in out]
    assert await _read([b"a\nb\n", b"c"]) == ["a\nb\n", "c"]  # unended last line: as it came


@pytest.mark.parametrize("id_last", [False, True])
async def test_a_line_over_the_limit_becomes_the_error_answering_its_request(
    id_last: bool,
) -> None:
    body = {"jsonrpc": "2.0", "id": "r-7", "result": {"text": "x" * 5000}}
    if id_last:
        body = {"jsonrpc": "2.0", "result": body["result"], "id": "r-7"}
    data = (json.dumps(body) + "\n" + '{"jsonrpc": "2.0", "id": 8, "result": {}}\n').encode()
    chunks = await _read([data[i : i + 700] for i in range(0, len(data), 700)], limit=1000)
    out = "".join(chunks).splitlines()
    first = json.loads(out[0])
    assert first["id"] == "r-7" and first["error"]["code"] == mcp_lines.TOO_LARGE_CODE
    assert "more than the 1000 bytes" in first["error"]["message"]
    assert json.loads(out[1]) == {"jsonrpc": "2.0", "id": 8, "result": {}}
    # a notification too long: skipped, as a line the SDK cannot parse
    note = json.dumps({"jsonrpc": "2.0", "method": "x", "params": {"p": "y" * 5000}}) + "\n"
    assert await _read([note.encode(), b'{"id": 9}\n'], limit=1000) == ['{"id": 9}\n']


def _catalog(tmp_path: Path, *args: str):
    argv = ", ".join(json.dumps(a) for a in (str(RAW), "--clean", *args))
    (tmp_path / "flow.toml").write_text(
        f"[mcp.srv]\ncommand = {json.dumps(sys.executable)}\nargs = [{argv}]\ntimeout = 60\n"
    )
    return build_catalog(load_config(tmp_path / "flow.toml", env={}), entry_points=False)


@pytest.mark.parametrize("args", [(), ("--id-last",)])
async def test_a_result_over_the_limit_fails_its_call_and_the_server_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.setattr(mcp_lines, "MAX_LINE_BYTES", 1_000_000)
    catalog = _catalog(tmp_path, *args)
    try:
        await catalog.prepare(["srv__*"])
        echo = catalog.get("srv__echo").func
        ctx = ToolContext(workspace=tmp_path)
        big = await echo({"text": "ab", "repeat": 400_000}, ctx)  # 800 kB: within it
        assert big == "ab" * 400_000
        with pytest.raises(RunError) as info:
            await echo({"text": "ab", "repeat": 1_000_000}, ctx)  # 2 MB: over it
        assert info.value.code == "tool_error"
        assert info.value.message.startswith("MCP tool srv__echo: its answer is 2.0 MB, more ")
        assert "than the 1.0 MB a stdio MCP server's message may be" in info.value.message
        assert await echo({"text": "next"}, ctx) == "next"  # the server and session go on
    finally:
        await catalog.aclose()
