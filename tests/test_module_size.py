"""No module under ``src/`` is over 1,200 lines (docs/ARCHITECTURE.md "Modules").

A module past that size holds more than one concern; split it along them (the checker's phases,
the language server's features) rather than raise the limit."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
#: the most lines a module under src/ may have
MAX_LINES = 1200


def test_no_module_in_src_is_over_1200_lines():
    sizes = {
        p.relative_to(SRC).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(SRC.rglob("*.py"))
    }
    assert sizes, f"no modules found under {SRC}"
    too_long = {path: n for path, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines (split them by concern): {too_long}"
