"""`flowc gen python`'s models accept exactly the JSON their contracts accept: a property test
over generated values, valid and invalid, comparing Pydantic validation with the contract
validator (:func:`agentflow.runtime.extract.validate` over :func:`contract_for`); and the
module's shape: recursive types, aliases, names Python cannot take, the header's digest
(docs/reference/python-clients.md)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentflow.api import gen_python
from agentflow.compiler import types as T
from agentflow.compiler.api import check_source
from agentflow.compiler.contracts import contract_for
from agentflow.compiler.gen_python import (
    current_interface,
    read_header,
    source_digest,
    stale_diagnostics,
)
from agentflow.runtime.extract import validate

FLOW = """
flow shapes "Every kind of type a client model holds"
input Everything

type Severity = "low" | "high" | 3
type Mode = "auto" | 2 | 0.5 | true

/// A tree: recursive through a list and an optional field
type Node {
  label: text @length(1, 3)
  children: Node[]
  next: Node?
}

type Everything {
  /// counted things
  count: int @range(0, 10)
  ratio: number @range(0.5, 2.5)
  flag: bool
  name: text @pattern("^[ab]+$")
  email: text? @format("email")
  tags: text[] @length(0, 2)
  scores: map<int>
  severity: Severity
  mode: Mode
  off: false
  either: int | text
  pause: duration
  free: json
  tree: Node
  place: { line: int, note: text? }
  class: text
  model_name: text?
  _hidden: bool?
}

stage echo -> Everything {
  require input.count < 10 else fail "ten is too many"
  return input
}
"""


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """``(module, check result)``: the client of FLOW, imported."""
    folder = tmp_path_factory.mktemp("shapes")
    flow = folder / "shapes.flow"
    flow.write_text(FLOW, encoding="utf-8")
    module = folder / "shapes_client.py"
    module.write_text(gen_python(flow, module), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("shapes_client", module)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["shapes_client"] = mod
    spec.loader.exec_module(mod)
    yield mod, check_source(FLOW, str(flow))
    sys.modules.pop("shapes_client", None)


# -- values near the type: each field mostly right, sometimes wrong, sometimes missing ----------
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-1, 3, allow_nan=False)
    | st.sampled_from(["", "a", "ab", "abc", "x@y.z", "1m", "low", "high", "1m\n", "ab\n"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "line"]), inner, max_size=2),
    max_leaves=6,
)  # fmt: skip


def valid(t: T.Type, env: T.TypeEnv, constraints: dict | None = None, depth: int = 0):
    """Values of ``t`` (with a field's ``constraints``) that its contract accepts."""
    c = constraints or {}
    t = env.resolve(t) if isinstance(t, T.NamedRef) else t
    if isinstance(t, T.OptionalType):
        return st.none() | valid(t.inner, env, c, depth)
    if isinstance(t, T.Prim):
        lo, hi = (list(c.get("range", c.get("length", ()))) + [None, None])[:2]
        if t.name == "int":
            return st.integers(lo if lo is not None else -5, hi if hi is not None else 5)
        if t.name == "number":
            return st.floats(lo if lo is not None else -5, hi if hi is not None else 5)
        if t.name == "bool":
            return st.booleans()
        if t.name == "duration":
            return st.sampled_from(["1m", "2h30m", "90s", "100ms"])
        if t.name == "json":
            return ANY_JSON
        if "format" in c:
            return st.sampled_from(["x@y.z", "a.b@example.org"])
        if "pattern" in c:
            return st.from_regex(c["pattern"][0])
        return st.text("abc", min_size=lo or 0, max_size=hi if hi is not None else 4)
    if isinstance(t, T.ListType):
        lo, hi = (list(c.get("length", ())) + [None, None])[:2]
        if depth > 2:  # deep enough: the recursion ends with empty lists
            return st.just([])
        size = hi if hi is not None else 2
        return st.lists(
            valid(t.elem, env, None, depth + 1), min_size=min(lo or 0, size), max_size=size
        )
    if isinstance(t, T.LiteralType):
        return st.just(t.value)
    if isinstance(t, T.UnionType):
        return st.one_of([valid(m, env, c, depth) for m in t.members])
    if isinstance(t, T.MapType):
        return st.dictionaries(
            st.sampled_from(["k", "l"]), valid(t.value, env, None, depth + 1), max_size=2
        )
    if isinstance(t, T.ObjectType):
        required = {
            n: valid(f.type, env, f.constraints, depth + 1)
            for n, f in t.fields.items()
            if not f.optional
        }
        optional = {
            n: valid(f.type, env, f.constraints, depth + 1)
            for n, f in t.fields.items()
            if f.optional and depth <= 2  # deeper, optional fields are left out: recursion ends
        }
        return st.fixed_dictionaries(required, optional=optional)
    return ANY_JSON


@st.composite
def mutated(draw, value):
    """``value`` with one place replaced by arbitrary JSON, a key removed or one added."""
    path = []
    node = value
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        path.append(key)
        node = node[key]

    def replace(node, keys, new):
        if not keys:
            return new
        copy = dict(node) if isinstance(node, dict) else list(node)
        copy[keys[0]] = replace(node[keys[0]], keys[1:], new)
        return copy

    how = draw(st.sampled_from(["json", "drop", "add"]))
    if how == "json" or not isinstance(node, dict):
        return replace(value, path, draw(ANY_JSON))
    changed = dict(node)
    if how == "drop" and changed:
        changed.pop(draw(st.sampled_from(sorted(changed))))
    else:
        changed["unknown"] = 1
    return replace(value, path, changed)


def near(t: T.Type, env: T.TypeEnv) -> st.SearchStrategy:
    """Valid values of ``t``, half of them changed in one place (most then invalid)."""
    return valid(t, env).flatmap(lambda v: st.just(v) | mutated(v))


def _agrees(model, schema, value) -> None:
    contract_ok = validate(schema, value) == []
    try:
        model.model_validate(value)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert model_ok == contract_ok, (value, validate(schema, value))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_models_accept_exactly_what_the_contracts_accept(shapes, data):
    mod, result = shapes
    env = result.env
    for name in ("Everything", "Node"):
        value = data.draw(near(T.NamedRef(name), env), label=name)
        _agrees(getattr(mod, name), contract_for(T.NamedRef(name), env), value)


VALID = {
    "count": 3, "ratio": 1.0, "flag": True, "name": "ab", "tags": [], "scores": {"a": 1},
    "severity": 3, "mode": 0.5, "off": False, "either": "x", "pause": "1m", "free": {"a": [1, None]},
    "tree": {"label": "r", "children": [{"label": "c", "children": []}]},
    "place": {"line": 1}, "class": "k", "_hidden": None,
}  # fmt: skip


def test_a_valid_value_round_trips_through_the_model_by_its_field_names(shapes):
    mod, result = shapes
    value = VALID
    assert validate(contract_for(T.NamedRef("Everything"), result.env), value) == []
    model = mod.Everything.model_validate(value)
    assert model.class_ == "k" and model.f_hidden is None and model.tree.children[0].label == "c"
    assert type(model.place).__name__ == "EverythingPlace"
    assert model.model_dump(mode="json", by_alias=True, exclude_unset=True) == value
    assert mod.Node.__doc__ == "A tree: recursive through a list and an optional field"
    field = mod.Everything.model_fields["count"]
    assert field.description == "counted things"


async def test_a_run_gives_its_output_and_stages_as_models_and_errors_as_values(shapes, tmp_path):
    mod, _ = shapes
    value = mod.Everything.model_validate(VALID)
    result = await mod.run_shapes(value, workspace=tmp_path)
    assert result.ok and isinstance(result.output, mod.Everything)
    assert result.output == value
    stages = mod.shapes_stages(result, value)  # the stage's value is the input itself
    assert stages.echo == value
    assert mod.shapes_stages(result).echo is None  # without the input: not known
    ten = mod.Everything.model_validate({**VALID, "count": 10})
    failed = await mod.run_shapes(ten, workspace=tmp_path)
    assert failed.status == "error" and failed.output is None
    assert failed.error is not None and failed.error.message == "ten is too many"


def test_the_header_names_the_source_and_its_digest_and_check_warns_when_it_is_stale(tmp_path):
    flow = tmp_path / "flows" / "shapes.flow"
    flow.parent.mkdir()
    flow.write_text(FLOW, encoding="utf-8")
    module = tmp_path / "clients" / "shapes.py"
    module.parent.mkdir()
    module.write_text(gen_python(flow, module), encoding="utf-8")
    header = read_header(module.read_text())
    assert header is not None
    assert header.source == "../flows/shapes.flow" and header.digest == source_digest(FLOW)
    assert header.interface == current_interface(str(flow), FLOW)
    assert stale_diagnostics(str(flow), FLOW, [module]) == []
    edited = FLOW.replace("ratio: number", "ratio: int")
    (diag,) = stale_diagnostics(str(flow), edited, [module])
    assert diag.code == "stale-generated-module" and diag.severity == "warning"
    assert "generated from an earlier version of this flow" in diag.message
    assert diag.hint.startswith(f"run `flowc gen python {flow} -o ")
    other = tmp_path / "flows" / "other.flow"  # a module of another flow is not this one's
    assert stale_diagnostics(str(other), edited, [module]) == []
    broken = FLOW + "\nstage oops -> int { return nope }\n"  # its errors are what is reported
    assert stale_diagnostics(str(flow), broken, [module]) == []


def test_the_module_is_as_ruff_formats_and_lints_it(shapes):
    """Generated code reads like the project's own: `ruff format` would change nothing and
    `ruff check` finds nothing (line length aside: a `Literal` of long texts stays long)."""
    import subprocess

    mod, _ = shapes
    for args in (["format", "--check"], ["check", "--select", "E,F,W,I,B,UP", "--ignore", "E501"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--no-cache", mod.__file__],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
