"""The `flow.toml` of a durable test that talks to a scripted server (support/chat_server) as
the provider `local`, its key in ``LOCAL_KEY``, no retries (a failed call fails at once)."""

from __future__ import annotations

from support.chat_server import TEST_API_KEY

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
