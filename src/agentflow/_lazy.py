"""Lazy package exports (PEP 562): a package's public names load their module on first use.

`flowc check` and `import agentflow.compiler` must not pay for the runtime, pydantic, jsonschema or
httpx; packages that re-export across stages (``agentflow``, ``agentflow.ir``) use this.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose public ``name`` lives in module
    ``exports[name]``.  A resolved name is cached in ``namespace`` (the package's globals), so
    later lookups are plain attribute reads.  Unknown names raise ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
