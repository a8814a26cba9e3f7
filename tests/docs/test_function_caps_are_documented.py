"""Every cap a library function has at run time is in its entry of docs/reference/functions.md
(an outside tester met `` `width` must be at most 100,000 `` from `pad_start`, which the page did
not say): the registry's summaries name the constants of runtime/functions.py."""

from __future__ import annotations

from support.paths import DOCS

from agentflow.core.functions import FUNCTIONS
from agentflow.core.vocabulary import MAX_EXPR_DEPTH
from agentflow.runtime import functions as rt

CAPS = {
    "pad_start": f"`width` at most {rt.MAX_PAD:,}",
    "pad_end": f"`width` at most {rt.MAX_PAD:,}",
    "join": f"at most {rt.MAX_TEXT_CHARS:,} characters",
    "replace": f"at most {rt.MAX_TEXT_CHARS:,} characters",
    "flatten": f"at most {rt.MAX_COMPUTED_ITEMS:,} of them",
    "range": f"at most {rt.MAX_LIST_ITEMS:,} numbers",
    "parse_json": f"nested at most {MAX_EXPR_DEPTH} deep",
    "format_number": "0 to 20",
    "round": "-20 to 20",
}


def test_each_cap_of_a_library_function_is_in_its_summary_and_on_the_page() -> None:
    page = (DOCS / "reference" / "functions.md").read_text(encoding="utf-8")
    for name, cap in CAPS.items():
        summary = FUNCTIONS[name].summary
        assert cap in summary, (name, summary)
        section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        assert cap in section, (name, section)
