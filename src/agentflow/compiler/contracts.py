"""Output contracts: `.flow` types → JSON Schema draft 2020-12 (docs/spec/LANGUAGE.md §3, §8, §10).

Rules:

- named object types are emitted once under ``$defs`` and referenced with ``$ref``; the root type of
  an agent contract is inlined at the root and refers to itself as ``{"$ref": "#"}``; so are the
  built-in ``Error`` and ``ErrorPlace``, while ``Outcome<T>`` is inlined (``{ok, value?, error?}``);
- objects are closed (``additionalProperties: false``); ``required`` lists the non-optional fields;
- ``T?`` is ``anyOf [T, {"type": "null"}]``, flat for a union (``(A | B)?`` is ``anyOf [A, B,
  null]``); a union of literals is an ``enum``;
- doc comments become ``description``; constraints become ``minimum``/``maximum``,
  ``minLength``/``maxLength`` (``minItems``/``maxItems`` on arrays), ``pattern`` and ``format``;
- no ``default`` anywhere, ever.
"""

from __future__ import annotations

import re
from typing import Any

from agentflow.compiler import types as T
from agentflow.core import vocabulary
from agentflow.core.schema_types import IDENT as _IDENT
from agentflow.core.schema_types import UNPRINTABLE as _UNPRINTABLE
from agentflow.core.schema_types import flow_string as flow_string  # re-exported (compiler)
from agentflow.core.schema_types import flow_type_of_schema as flow_type_of_schema
from agentflow.core.schema_types import required_fields as _required
from agentflow.errors import ContractError as ContractError  # re-exported (cli, serve, evals)

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
DURATION_PATTERN = f"^{vocabulary.DURATION_PATTERN}$"
#: Built-in object types emitted under ``$defs`` by their name (errors as values).
_BUILTIN_OBJECTS = frozenset({vocabulary.ERROR_TYPE, vocabulary.ERROR_PLACE_TYPE})


class _Builder:
    def __init__(self, env: T.TypeEnv, root_name: str | None, *, values: bool = False):
        self.env = env
        self.root_name = root_name
        #: a value's JSON form (``flowc schema``): ``Verdict`` is its ``{passed, failures}``
        self.values = values
        self.defs: dict[str, dict[str, Any]] = {}
        self._building: set[str] = set()

    # -- types -------------------------------------------------------------------------------
    def schema(self, t: T.Type) -> dict[str, Any]:
        if isinstance(t, T.NamedRef):
            return self.named(t.name)
        if isinstance(t, T.ObjectType):
            if t.name is not None and t.name in self.env.objects:
                return self.named(t.name)
            if t.name in _BUILTIN_OBJECTS:  # Error, ErrorPlace: once under `$defs`
                if t.name not in self.defs:
                    self.defs[t.name] = self.object(t)
                return {"$ref": f"#/$defs/{t.name}"}
            return self.object(t)
        if isinstance(t, T.Prim):
            return self.prim(t)
        if isinstance(t, T.ListType):
            return {"type": "array", "items": self.schema(t.elem)}
        if isinstance(t, T.OptionalType):
            inner = self.schema(t.inner)
            if inner == {}:
                return {}
            return _any_of([inner, {"type": "null"}])
        if isinstance(t, T.LiteralType):
            return {"enum": [t.value]}
        if isinstance(t, T.UnionType):
            return self.union(t)
        if isinstance(t, T.MapType):
            return {"type": "object", "additionalProperties": self.schema(t.value)}
        if isinstance(t, T.NeverType):
            return {"not": {}}
        if isinstance(t, T.VerdictType):
            if not self.values:
                raise ContractError(
                    "`Verdict` is not schema-generatable: it is the value of `verify`, never "
                    "asked of an agent or given as input"
                )
            if "Verdict" not in self.defs:
                self.defs["Verdict"] = self.object(T.VERDICT_OBJECT)
            return {"$ref": "#/$defs/Verdict"}
        if isinstance(t, T.ExternType):
            raise ContractError(_extern_reason(t.name))
        if isinstance(t, T.ErrorType):
            raise ContractError("a type with errors has no contract")
        raise ContractError(f"`{t}` has no JSON Schema")

    def prim(self, t: T.Prim) -> dict[str, Any]:
        name = t.name
        if name == "text":
            return {"type": "string"}
        if name == "int":
            return {"type": "integer"}
        if name == "number":
            return {"type": "number"}
        if name == "bool":
            return {"type": "boolean"}
        if name in ("path", "member"):
            return {"type": "string", "x-flow-type": name}
        if name == "duration":
            return {"type": "string", "pattern": DURATION_PATTERN, "x-flow-type": "duration"}
        if name == "null":
            return {"type": "null"}
        return {}  # json

    def union(self, t: T.UnionType) -> dict[str, Any]:
        members = list(t.members)
        literals = [m for m in members if isinstance(m, T.LiteralType)]
        nullable = any(isinstance(m, T.Prim) and m.name == "null" for m in members)
        others = [m for m in members if not isinstance(m, T.LiteralType) and m not in (T.NULL,)]
        parts: list[dict[str, Any]] = []
        if literals:
            parts.append({"enum": [lit.value for lit in literals]})
        parts.extend(self.schema(m) for m in others)
        if nullable:
            parts.append({"type": "null"})
        return _any_of(parts)

    def named(self, name: str) -> dict[str, Any]:
        if name in self.env.aliases:
            if name in self._building:
                raise ContractError(f"type alias `{name}` is cyclic")
            self._building.add(name)
            try:
                return self.schema(self.env.aliases[name])
            finally:
                self._building.discard(name)
        if name in self.env.externs:
            raise ContractError(_extern_reason(name))
        obj = self.env.objects.get(name)
        if obj is None:
            raise ContractError(f"unknown type `{name}`")
        if name == self.root_name:
            return {"$ref": "#"}
        if name not in self.defs and name not in self._building:
            self._building.add(name)
            try:
                self.defs[name] = self.object(obj)
            finally:
                self._building.discard(name)
        return {"$ref": f"#/$defs/{name}"}

    def object(self, t: T.ObjectType) -> dict[str, Any]:
        props: dict[str, Any] = {}
        required: list[str] = []
        for fname, f in t.fields.items():
            try:
                s = self.schema(f.type)
            except ContractError as e:  # say where: `Decision.checks: `Verdict` is not …`
                where = f"{t.name}." if t.name else ""
                raise ContractError(f"field `{where}{fname}`: {e}") from None
            s = _with_constraints(s, f, self.env)
            if f.doc:
                s = {"description": f.doc, **s}
            props[fname] = s
            if not f.optional:
                required.append(fname)
        out: dict[str, Any] = {}
        if t.doc:
            out["description"] = t.doc
        out["type"] = "object"
        out["properties"] = props
        out["required"] = required
        out["additionalProperties"] = False
        return out


def _any_of(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``anyOf`` of ``parts``, flat: a part that is itself only an ``anyOf`` (an optional
    union, ``(int | text)?``; a union with an optional member) gives its members instead, each
    member once, ``{"type": "null"}`` last; a single member is itself (docs/reference/types.md
    "The types")."""
    flat: list[dict[str, Any]] = []
    for part in parts:
        for member in part["anyOf"] if set(part) == {"anyOf"} else [part]:
            if member not in flat:
                flat.append(member)
    null = {"type": "null"}
    if null in flat:
        flat = [m for m in flat if m != null] + [null]
    return flat[0] if len(flat) == 1 else {"anyOf": flat}


def _with_constraints(schema: dict[str, Any], f: T.Field, env: T.TypeEnv) -> dict[str, Any]:
    """Apply a field's constraints to its schema (inside ``anyOf`` for an optional field)."""
    if not f.constraints:
        return schema
    if "anyOf" in schema and f.optional:
        inner = [
            _apply(s, f.constraints, env) if s != {"type": "null"} else s for s in schema["anyOf"]
        ]
        return {**schema, "anyOf": inner}
    return _apply(schema, f.constraints, env)


def _apply(
    schema: dict[str, Any], constraints: dict[str, tuple[Any, ...]], env: T.TypeEnv
) -> dict[str, Any]:
    out = dict(schema)
    # `@length` bounds a text's characters, an array's items or a map's keys
    lo_key, hi_key = {
        "array": ("minItems", "maxItems"),
        "object": ("minProperties", "maxProperties"),
    }.get(str(out.get("type")), ("minLength", "maxLength"))
    for name, args in constraints.items():
        if name == "range":
            lo, hi = (list(args) + [None, None])[:2]
            if lo is not None:
                out["minimum"] = lo
            if hi is not None:
                out["maximum"] = hi
        elif name == "length":
            lo, hi = (list(args) + [None, None])[:2]
            if lo is not None:
                out[lo_key] = lo
            if hi is not None:
                out[hi_key] = hi
        elif name == "pattern" and args:
            out["pattern"] = args[0]
        elif name == "format" and args:
            out["format"] = args[0]
    return out


def _extern_reason(name: str) -> str:
    """Why the extern type ``name`` has no schema."""
    return (
        f"`{name}` is an extern type (`extern type {name}`): opaque, only its tools make and "
        "read its values, so it has no JSON form and is not schema-generatable"
    )


def contract_for(t: T.Type, env: T.TypeEnv, *, values: bool = False) -> dict[str, Any]:
    """Return the JSON Schema (2020-12) of type ``t``.

    A named object type becomes the root schema, other named types go under ``$defs``.
    Raises :class:`ContractError` for types that are not schema-generatable
    (docs/spec/LANGUAGE.md §3), its message saying why and where (``field `D.x`: …``).  With
    ``values`` (``flowc schema``: the JSON form of a value, as ``flowc gen python`` models it)
    ``Verdict`` is its ``{passed, failures}`` object under ``$defs``.
    """
    root_name = _root_object_name(t, env)
    b = _Builder(env, root_name, values=values)
    if root_name is not None:
        schema = b.object(env.objects[root_name])
    else:
        schema = b.schema(t)
    return _finish(schema, b)


def agent_contract(t: T.Type, env: T.TypeEnv) -> tuple[dict[str, Any], bool]:
    """Return ``(output_schema, wrapped)`` for an agent's ``expect`` type
    (docs/spec/LANGUAGE.md §10).

    A named object type is the root itself (``wrapped`` False); any other type ``T`` is wrapped as
    ``{ value: T }`` (``wrapped`` True) and read back as ``.output.value``.
    """
    root_name = _root_object_name(t, env)
    if root_name is not None:
        return contract_for(t, env), False
    b = _Builder(env, None)
    inner = b.schema(t)
    schema = {
        "type": "object",
        "properties": {"value": inner},
        "required": ["value"],
        "additionalProperties": False,
    }
    return _finish(schema, b), True


def expect_is_wrapped(expect: str, env: T.TypeEnv) -> bool:
    """Whether an agent step whose ``meta.expect`` is ``expect`` (the ``.flow`` text of its
    ``expect`` type, as lowering writes it) has the wrapped contract ``{ value: T }`` of
    :func:`agent_contract`: every type but a named object type (or an alias of one)."""
    return _root_object_name(T.NamedRef(expect), env) is None


def object_type_name(t: T.Type, env: T.TypeEnv) -> str | None:
    """The name of the object type ``t`` is (``Plan``, through aliases), the root of its
    contract (:func:`contract_for`); None for any other type."""
    return _root_object_name(t, env)


def _root_object_name(t: T.Type, env: T.TypeEnv) -> str | None:
    seen = 0
    while isinstance(t, T.NamedRef) and t.name in env.aliases and seen < 100:
        t = env.aliases[t.name]
        seen += 1
    if isinstance(t, T.NamedRef) and t.name in env.objects:
        return t.name
    if isinstance(t, T.ObjectType) and t.name is not None and t.name in env.objects:
        return t.name
    return None


def _finish(schema: dict[str, Any], b: _Builder) -> dict[str, Any]:
    out = {"$schema": SCHEMA_DIALECT, **schema}
    if b.defs:
        out["$defs"] = {k: b.defs[k] for k in sorted(b.defs)}
    return out


# ---------------------------------------------------------------------------------------------
# The other way: a tool's JSON Schema input → an `extern tool` declaration (`flowc tools --extern`)


def _one_line(text: str) -> str:
    r"""``text`` fit for a ``// …`` comment: control characters and line breaks shown as ``\u{…}``
    escapes, so the comment stays on its line and prints nothing to the terminal."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", text)


def extern_declaration(
    name: str,
    input_schema: Any,
    description: str | None = None,
    output_schema: Any = None,
) -> str:
    """An ``extern tool`` declaration for a catalog tool, preceded by ``// description`` when one
    is given.

    A name that is not a `.flow` identifier (an MCP tool with ``-`` or ``.``) is declared under
    an alias: ``extern tool "everything__get-tiny-image" as everything__get_tiny_image(…)``.
    A parameter that is not required may be left out: ``name?: T`` (``null`` is not offered
    unless the schema allows it).  The result type is the ``output_schema``'s (MCP
    ``outputSchema``; a ``{result: T}`` wrapper — what the SDK makes of a non-object result — is
    unwrapped as the client unwraps it), else ``json``.  Raises ValueError when a required
    parameter's name is not a `.flow` identifier (an optional one is left out, with a note)."""
    schema = inline_refs(input_schema) if isinstance(input_schema, dict) else {}
    output_schema = inline_refs(output_schema) if isinstance(output_schema, dict) else None
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    required = _required(schema)
    params = []
    dropped = []
    for pname, sub in props.items():
        if not _IDENT.match(pname):
            if pname in required:
                raise ValueError(
                    f"parameter `{_one_line(pname)}` of `{_one_line(name)}` is not a .flow name"
                )
            dropped.append(pname)
            continue
        t = flow_type_of_schema(sub)
        params.append(f"{pname}: {t}" if pname in required else f"{pname}?: {t}")
    returns = "json"
    if isinstance(output_schema, dict):
        props_out = output_schema.get("properties")
        if isinstance(props_out, dict) and set(props_out) == {"result"}:
            returns = flow_type_of_schema(props_out["result"])
        else:
            returns = flow_type_of_schema(output_schema)
    first = (description or "").strip().splitlines()
    head = f"// {_one_line(first[0])}\n" if first else ""
    if dropped:
        head += f"// (left out: optional parameters {', '.join(_one_line(d) for d in dropped)})\n"
    if _IDENT.match(name):
        declared = name
    else:
        declared = f"{flow_string(name)} as {flow_alias(name)}"
    return f"{head}extern tool {declared}({', '.join(params)}) -> {returns}"


def inline_refs(schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """``schema`` with its local references (``#/$defs/X``, ``#/definitions/X``) replaced by
    what they name, up to 6 levels deep (deeper or unresolvable references are left as they
    are, which reads as ``json``)."""
    definitions, dollar_defs = schema.get("definitions"), schema.get("$defs")
    defs = {
        **(definitions if isinstance(definitions, dict) else {}),
        **(dollar_defs if isinstance(dollar_defs, dict) else {}),
    }

    def walk(node: Any, level: int) -> Any:
        if isinstance(node, list):
            return [walk(n, level) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and level < 6:
            m = re.fullmatch(r"#/(?:\$defs|definitions)/([^/]+)", ref)
            if m and isinstance(defs.get(m.group(1)), dict):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**defs[m.group(1)], **rest}, level + 1)
        return {k: walk(v, level) for k, v in node.items() if k not in ("$defs", "definitions")}

    out: dict[str, Any] = walk(schema, depth)
    return out


def flow_alias(name: str) -> str:
    """A `.flow` identifier for catalog tool ``name``: every character that cannot be in one
    becomes ``_`` (``everything__get-tiny-image`` → ``everything__get_tiny_image``)."""
    alias = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not re.match(r"[A-Za-z_]", alias):
        alias = "t_" + alias
    return alias
