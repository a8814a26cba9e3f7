"""The standard library (docs/spec/LANGUAGE.md §7, docs/spec/RUNTIME.md §4): data, in the bottom
layer.

``prelude.flow`` declares the signatures the checker reads (``read_file``, ``list_dir``, ``glob``,
``grep``, ``write_file``, ``edit_file``); plans name them ``builtin__<name>``.  The
implementations, JSON Schema inputs and model-facing descriptions live in
:mod:`agentflow.runtime.tools.builtin`;
``tests/runtime/tools/test_prelude_matches_builtin_schemas.py`` checks that prelude and schemas
agree.  This package imports nothing of agentflow, so every layer may read the prelude.
"""

from __future__ import annotations

from pathlib import Path

#: The prelude source file.
PRELUDE = Path(__file__).resolve().with_name("prelude.flow")

__all__ = ["PRELUDE"]
