"""Golden checker tests: ``pytest tests/check --update-golden`` rewrites the inline
expectations (``// error: code`` / ``// warning: code`` at the end of lines) of the
``tests/check/*.flow`` files, and the render snapshots under ``tests/check/render/``, to match
what the checker reports now.  ``FLOW_UPDATE_GOLDEN=1`` does the same from any directory.
"""

from __future__ import annotations


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden expectations of tests/check to the current checker output",
    )
