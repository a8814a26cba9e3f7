"""docs/reference/functions.md is the standard library's registry (agentflow.core.functions)
written out — every function with its signature, summary, failure codes and example — and every
example runs: all of them are compiled into one flow, which runs, and each value is the one the
page shows. ``pytest --update-golden`` rewrites the page from the registry."""

from __future__ import annotations

import json

from support.golden import Golden
from support.paths import DOCS

from agentflow.api import compile_source, run_sync
from agentflow.core.functions import CATEGORIES, FUNCTIONS
from agentflow.core.vocabulary import ERROR_CODES

PAGE = DOCS / "reference" / "functions.md"

INTRO = """\
# Library functions

A standard library of pure functions, called **positionally** like functions in other
languages: `join(xs, ", ")`, `lower(s)`, `round(x, 2)`. They work in any expression — a `let`, a
`task` interpolation, a `filter` condition, a hand-written plan's `{{ … }}` template — cost no
inference and no tool call, and are deterministic (the same arguments always give the same value,
so a durable run replays them safely). The evaluator that runs templates runs them: the compiler
inlines a call into the template of the step that uses it, like any pure expression
([compilation](compilation.md)).

A call with **named** arguments is a tool call ([tools](tools.md)): `read_file(path: p)`. The form
of the call decides, so a tool may share a library function's name: `join(parts: xs)` calls the
tool `join`, `join(xs, ", ")` the function.

A flow's own functions are declared with `fn` and called the same way:
`fn rank(s: Severity) -> int = …`, then `rank(t.severity)` ([user functions](programs.md#user-functions)).
A user function may not take a library function's name.

The checker types every call from the function's signature. Type parameters (`<T>`) take the
types of the arguments, so `sort_by(input.items, "-score")` is an `Item[]` and
`sum(input.counts)` an `int`; a bound (`<T: number>`) limits them. A wrong argument is a
`type-mismatch`, a wrong number of arguments `argument-count`, a named argument
`named-argument`, each with the signature in a note; an unknown function is `unknown-function`
with a "did you mean", also for the names other languages use (`toUpperCase`, `strip`,
`length`, `s.lower()`, `str.join(…)`, `Math.round(x)`; a function read as a field, `s.lower`, is an
`unknown-field` whose hint is the call, `lower(s)`):

```flow
input { title: text, tags: text[] }
stage s -> text {
  let _a = input.title.lower()  // error[not-callable]
  let _b = strip(input.title)  // error[unknown-function]
  let _c = join(input.tags)  // error[argument-count]
  return lower(input.tags)  // error[type-mismatch]
}
```

A field name given as text (`sort_by`, `group_by`, `count_by`) or a list of keys (`pick`,
`omit`) is checked against the element's type when it is written as a literal
(`unknown-field`). `pick`, `omit` and `merge` of objects keep their fields' types. A string
literal a function would refuse on every run is refused when the flow is checked
([`invalid-argument`](../diagnostics.md#invalid-argument)): the regular expression of `match`,
`matches` and `find_all` (`matches(s, "(")`), the `fill` of `pad_start` / `pad_end` (one
character), the `old` of `replace` (not empty).

A function fails at run time only in the ways listed under it, each with a registered code
([errors](errors.md)): `invalid_argument` (a value it cannot use: a negative count, a bad
pattern), `parse_error` (`parse_int`, `parse_number`, `parse_json` on text that does not parse),
`regex_timeout` (a regular expression that runs longer than its budget of 1 s of CPU — no
catastrophic backtracking freezes a run), `arithmetic` (a result no number of the language
holds: `floor(1e300)`, `abs` of −2⁶³, a `sum` of `int`s past 2⁶³−1, as the operators' own) and
`bad_path` (an element without the named field; `??` catches it). A value of the wrong kind — possible with `json` values — is `validation`.
`catch` catches them like any failure:

```flow
input { raw: text }
stage s -> { n: int, data: json } {
  let n = parse_int(input.raw) catch on [parse_error] { 0 }
  let data = parse_json(input.raw) catch { null }
  return { n: n, data: data }
}
```

Regular expressions (`match`, `matches`, `find_all`) have the syntax of Python's `re` module
(run by the `regex` library); write backslashes twice in a `.flow` string (`"\\\\d+"`).

```flow
type Item { name: text, score: int, tags: text[] }
input { items: Item[], title: text }
stage summary -> text {
  let ranked = sort_by(input.items, "-score")
  let best = take(ranked, 3)[*].name
  let tags = unique(flatten(input.items[*].tags))
  let label = if len(best) == 0 then "none" else join(best, ", ")
  return "${upper(trim(input.title))}: ${label} (${len(tags)} tags)"
}
```
"""


def _result(v: object) -> str:
    return json.dumps(v, ensure_ascii=False)


def reference_page() -> str:
    """The page, from the registry."""
    out = [INTRO]
    for cat in CATEGORIES:
        out.append(f"\n## {cat[0].upper() + cat[1:]}\n")
        names = [n for n, f in FUNCTIONS.items() if f.category == cat]
        out.append("\n" + " · ".join(f"[`{n}`](#{n.replace('_', '_')})" for n in names) + "\n")
        for name in names:
            f = FUNCTIONS[name]
            out.append(f"\n### `{name}`\n\n```text\n{f.signature}\n```\n\n")
            out.append(f"{f.summary[0].upper() + f.summary[1:]}.")
            if f.errors:
                codes = ", ".join(f"`{c}`" for c in f.errors)
                out.append(f" Fails with {codes}.")
            out.append(f"\n\n`{f.example}` gives `{_result(f.result)}`.\n")
    return "".join(out)


def test_the_reference_page_is_the_registry(golden: Golden):
    golden.check(PAGE, reference_page())


def test_every_function_has_a_summary_an_example_and_registered_codes():
    for name, f in FUNCTIONS.items():
        assert f.summary and f.example.startswith(name + "(")
        assert set(f.errors) <= set(ERROR_CODES), name


def test_every_example_compiles_runs_and_gives_the_value_shown(tmp_path):
    fields = ",\n    ".join(f"{name}: {f.example}" for name, f in FUNCTIONS.items())
    source = f"stage examples -> json {{\n  return {{\n    {fields}\n  }}\n}}\n"
    compiled = compile_source(source, "examples.flow")
    plan = tmp_path / "examples.yaml"
    plan.write_text(compiled.to_yaml(), encoding="utf-8")
    result = run_sync(str(plan), None, workspace=tmp_path, shape_cache=False)
    assert result.ok, result.error
    for name, f in FUNCTIONS.items():
        got = result.output[name]
        assert got == f.result and type(got) is type(f.result), (name, got, f.result)
