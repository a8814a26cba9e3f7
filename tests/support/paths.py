"""Where things are, for tests: everything a test reads lives inside this repository.

``REPO`` is the repository root, ``TESTS`` its ``tests/`` folder, ``EXAMPLES`` the shipped
``examples/``, ``DOCS`` the documentation (``docs/``: the reference, the tutorial, the vendored
specification), ``SPEC_EXAMPLES`` the specification's example programs vendored under
``tests/data/spec_examples/`` and ``SPEC_DIAGNOSTICS`` their marked diagnostics corpus.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
EXAMPLES = REPO / "examples"
DOCS = REPO / "docs"
SPEC_EXAMPLES = TESTS / "data" / "spec_examples"
SPEC_DIAGNOSTICS = SPEC_EXAMPLES / "diagnostics"
