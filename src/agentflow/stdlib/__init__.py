"""The standard library (LANGUAGE.md §7, RUNTIME.md §4).

``prelude.flow`` declares the signatures the checker reads (``read_file``, ``list_dir``, ``glob``,
``grep``, ``write_file``, ``edit_file``); plans name them ``builtin__<name>``. The implementations,
JSON Schema inputs and model-facing descriptions live in :mod:`agentflow.runtime.tools.builtin` and
are re-exported here; ``tests/test_tools_catalog.py`` checks that prelude and schemas agree.
"""

from __future__ import annotations

from pathlib import Path

from agentflow.runtime.tools.builtin import DESCRIPTIONS, SCHEMAS, builtin_tools

#: The prelude source file.
PRELUDE = Path(__file__).with_name("prelude.flow")

__all__ = ["DESCRIPTIONS", "PRELUDE", "SCHEMAS", "builtin_tools"]
