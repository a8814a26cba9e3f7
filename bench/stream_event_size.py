"""How long reading one big streamed model reply takes, by the size of its largest event.

A scripted OpenAI-compatible server (agentflow.testing ChatServer, loopback) streams an answer
of N MiB as ONE ``content`` delta, or cut into 256 events; the figure is the wall-clock seconds
of ``ModelRouter.chat`` (one attempt, no retries) and its outcome. 64 MiB in one event is past
the reply cap (docs/models.md "Errors": permanent, "the reply is larger than 64 MiB"). Before the
fix (stop 44) the SSE line splitter searched the growing line again at each network chunk:
quadratic in one event's size (16 MiB: 21 s), and a 70 MiB event ran into the request timeout
and was retried as transient. Run it with another checkout's interpreter for a before figure.

    nice -n 19 .venv/bin/python bench/stream_event_size.py [--sizes 4,16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter
from agentflow.testing.chat_server import TEST_API_KEY, ChatServer, sse


def _reply(mib: int, events: int):
    text = "x" * (mib * 1024 * 1024)
    step = -(-len(text) // events)
    base = {"id": "c", "model": "m"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"content": text[i : i + step]}}]}
        for i in range(0, len(text), step)
    ]
    done = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return sse([*chunks, done, "[DONE]"])


async def _once(server: ChatServer, folder: Path) -> tuple[float, str]:
    (folder / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "p"\nmodel = "m"\n'
        f'stream = true\n[providers.p]\ntimeout = 600\nkind = "openai"\nbase_url = "{server.url}"\n'
        'api_key_env = "K"\n'
    )
    config = load_config(folder / "flow.toml", env={"K": TEST_API_KEY})
    router = ModelRouter(config, retry=RetryPolicy(max_retries=0))
    started = time.perf_counter()
    try:
        response = await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
        outcome = f"ok, {len(response.text or '') / 1024**2:g} MiB"
    except Exception as exc:  # noqa: BLE001 - the figure reports it
        outcome = f"{getattr(exc, 'kind', type(exc).__name__)}: {str(exc)[:90]}"
    finally:
        await router.aclose()
    return time.perf_counter() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4,16,64")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mib in (int(s) for s in args.sizes.split(",")):
            for events in (1, 256):
                server = ChatServer().start()
                try:
                    server.script([_reply(mib, events)])
                    took, outcome = asyncio.run(_once(server, Path(tmp)))
                finally:
                    server.stop()
                print(f"{mib:>3} MiB in {events:>3} event(s): {took:7.2f} s  {outcome}", flush=True)


if __name__ == "__main__":
    main()
