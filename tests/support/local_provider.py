"""The `flow.toml` of a durable test that talks to a scripted server (support/chat_server) as
the provider `local`, its key in ``LOCAL_KEY``, no retries (a failed call fails at once)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.chat_server import TEST_API_KEY, ChatServer

#: the environment variable holding the provider's key, and its value in tests
KEY_ENV = {"LOCAL_KEY": TEST_API_KEY}


def local_config(url: str, *, tools: bool = False) -> str:
    """`flow.toml` text: model `nm` (default) of provider `local` at ``url``; ``tools``: the
    user tools of `tools.py` beside it."""
    text = (
        '[models]\ndefault = "nm"\n\n[models.named.nm]\nprovider = "local"\nmodel = "m"\n\n'
        f'[providers.local]\nkind = "openai"\nbase_url = "{url}"\n'
        'api_key_env = "LOCAL_KEY"\nmax_retries = 0\n'
    )
    return text + ('\n[tools]\nmodules = ["tools.py"]\n' if tools else "")


def run_against(
    tmp_path: Path, reply: Callable[[Any], Any], *args: str
) -> subprocess.CompletedProcess[str]:
    """``flowc ARGS`` in ``tmp_path`` (its `.flow` written there) against a scripted server
    answering every request with ``reply(request)``, configured by :func:`local_config`;
    uncoloured text, its key set."""
    with ChatServer(reply) as server:
        (tmp_path / "flow.toml").write_text(local_config(server.url), encoding="utf-8")
        return subprocess.run(
            [str(Path(sys.executable).parent / "flowc"), *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **KEY_ENV, "NO_COLOR": "1"},
        )


#: A `flow.toml`'s head naming two providers that nothing listens for (port 9), each with its
#: own key variable (``FIRST_KEY``, ``SECOND_KEY``), the default model ``first:m``: the
#: key-check tests add their agents and tools after it
TWO_KEYED_PROVIDERS = """\
[models]
default = "first:m"
[providers.first]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "FIRST_KEY"
[providers.second]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SECOND_KEY"
"""
