"""`if c { fail m }` is named `if` in the progress, the error and an item's error value, as the
`.flow` writes it: it was `require` (the exit step it compiles to shares `require`'s form),
a word the program does not hold (break14). `require c else fail m` keeps `require`."""

from __future__ import annotations

import io

from agentflow import api
from agentflow.runtime.events import ConsoleSink

FLOW = """\
input { xs: int[] }
stage s -> json {
  let r = map input.xs as x tolerate 100% {
    if x % 2 == 0 { fail "even ${x}" }
    require x > 0 else fail "not positive"
    x
  }
  return r.errors[*].where.label
}
"""


def test_an_if_that_fails_is_named_if_and_a_require_require(tmp_path):
    flow = tmp_path / "f.flow"
    flow.write_text(FLOW, encoding="utf-8")
    progress = io.StringIO()
    result = api.run_sync(
        str(flow), {"xs": [2, -1]}, workspace=tmp_path, shape_cache=False,
        sinks=[ConsoleSink(progress, force_plain=True)],
    )  # fmt: skip
    assert result.status == "ok", result.error
    assert result.output == ["s › item 0 › if", "s › item 1 › require"]
    assert "✗ s › item 0 › if " in progress.getvalue()
