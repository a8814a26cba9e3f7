"""The money a model call costs (docs/models.md "Cost").

Prices come from ``flow.toml`` when it gives one for the model (``price = {input, output,
cache_read?, cache_write?}`` in US dollars per million tokens, on ``[models.named.X]`` or under
``[prices."MODEL"]``), else from the price table of the ``genai-prices`` package (Pydantic's
maintained table of provider prices; its data ships inside the package, so no network is used),
which finds the provider by its API URL (OpenAI, Anthropic, DeepSeek, OpenRouter, …).
A model that neither knows has no price: its calls report no cost (and count 0 against money
budgets).

``input_tokens`` is the whole prompt; the cached part is priced at the cache-read price and the
part written to the cache at the cache-write price (each the input price when none is given).
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Price", "PriceBook"]

_MTOK = 1_000_000


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens: ``input``, ``output``, ``cache_read``, ``cache_write``
    (the last two default to ``input``)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: dict[str, Any]) -> float:
        """Dollars for one call's ``usage`` (neutral usage, see ChatResponse)."""
        total_in = int(usage.get("input_tokens") or 0)
        read = int(usage.get("cache_read_tokens") or 0)
        write = int(usage.get("cache_write_tokens") or 0)
        plain = max(0, total_in - read - write)
        out = int(usage.get("output_tokens") or 0)
        read_price = self.input if self.cache_read is None else self.cache_read
        write_price = self.input if self.cache_write is None else self.cache_write
        dollars = (
            plain * self.input + read * read_price + write * write_price + out * self.output
        ) / _MTOK
        return round(dollars, 10)


class PriceBook:
    """Looks up and caches the price of each model (thread-safe).

    ``configured``: ``{model name or label: Price}`` from flow.toml; they win over the table.
    ``use_table``: False to never consult genai-prices (tests, or a user who wants only their
    own prices).
    """

    def __init__(self, configured: dict[str, Price] | None = None, *, use_table: bool = True):
        self.configured = dict(configured or {})
        self.use_table = use_table
        self._unknown: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def cost(
        self,
        usage: dict[str, Any],
        *,
        model: str,
        label: str = "",
        kind: str = "openai",
        base_url: str | None = None,
    ) -> float | None:
        """Dollars for one call of ``model`` (the provider's model name; ``label`` is the
        reference it was configured under), or None when no price is known."""
        price = self.configured.get(label) or self.configured.get(model)
        if price is not None:
            return price.cost(usage)
        if not self.use_table:
            return None
        key = (model, kind, base_url or "")
        with self._lock:
            if key in self._unknown:
                return None
        dollars = _table_cost(usage, model, kind, base_url)
        if dollars is None:
            with self._lock:
                self._unknown.add(key)
        return dollars

    def input_price(
        self, *, model: str, label: str = "", kind: str = "openai", base_url: str | None = None
    ) -> float | None:
        """Dollars for one million prompt tokens of ``model``, or None when unknown."""
        return self.cost(
            {"input_tokens": _MTOK, "output_tokens": 0},
            model=model,
            label=label,
            kind=kind,
            base_url=base_url,
        )


def _is_local(base_url: str) -> bool:
    """True for a server on this machine or a private network (no provider the table knows)."""

    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _table_cost(usage: dict[str, Any], model: str, kind: str, base_url: str | None) -> float | None:
    if not base_url or _is_local(base_url):
        return None
    try:  # imported on first use: the table is large (≈0.6 s), most runs never need it
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    try:
        result = calc_price(
            Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                cache_read_tokens=int(usage.get("cache_read_tokens") or 0) or None,
                cache_write_tokens=int(usage.get("cache_write_tokens") or 0) or None,
            ),
            model_ref=model,
            # matched by the provider's URL: a local server (Ollama, vLLM, a test server) is no
            # provider the table knows, so its calls get no price rather than a wrong one
            provider_api_url=base_url,
        )
    except (LookupError, ValueError):
        return None
    total = result.total_price
    return float(round(Decimal(total), 10))
