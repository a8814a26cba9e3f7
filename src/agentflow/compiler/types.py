"""Semantic types of the `.flow` language and the assignability relation (docs/spec/LANGUAGE.md §3).

Written types (:mod:`agentflow.grammar.ast` ``TypeExpr`` nodes) are resolved by the checker into
the immutable values defined here:

- :class:`Prim` — ``text int number bool path member duration json null`` (singletons below);
- :data:`NEVER` — the element type of ``[]``; :data:`ERROR` — the error type given to anything whose
  type could not be determined because of an earlier diagnostic (assignable to and from everything);
- :class:`ListType`, :class:`OptionalType`, :class:`UnionType`, :class:`LiteralType`,
  :class:`ObjectType` (closed; ``fields`` maps name → :class:`Field`), :class:`MapType`;
- :class:`NamedRef` — a reference to a named object type (``type N { … }``), resolved through a
  :class:`TypeEnv`; this is what lets named types be recursive;
- :class:`VerdictType` (:data:`VERDICT`, the type of ``verify``) and :class:`ExternType`
  (``extern type N``), neither schema-generatable;
- :class:`RangeType` (``a..b``, only meaningful as the right operand of ``in``) and
  :class:`UseType` (a ``use`` alias; only meaningful as an agent target).

``assignable(src, dst, env)`` implements the rules of §3; ``type_str(t)`` spells a type the way a
user would write it, for messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentflow.core.vocabulary import ERROR_CODES as _ERROR_CODES

__all__ = [
    "type_words",
    "Type",
    "Prim",
    "NeverType",
    "mentions_never",
    "ErrorType",
    "ListType",
    "OptionalType",
    "UnionType",
    "LiteralType",
    "Field",
    "ObjectType",
    "MapType",
    "NamedRef",
    "VerdictType",
    "ExternType",
    "RangeType",
    "UseType",
    "TypeEnv",
    "TEXT",
    "INT",
    "NUMBER",
    "BOOL",
    "PATH",
    "MEMBER",
    "DURATION",
    "JSON",
    "NULL",
    "NEVER",
    "ERROR",
    "VERDICT",
    "PRIMS",
    "VERDICT_OBJECT",
    "assignable",
    "type_str",
    "widen",
    "join",
    "strip_optional",
    "make_union",
    "make_optional",
    "is_error",
    "is_numeric",
    "is_textual",
    "overlaps",
    "finite_values",
    "literal_str",
    "schema_problem",
]


class Type:
    """Base class of semantic types (immutable values; compare with ``==``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class Prim(Type):
    """A primitive type: ``text int number bool path member duration json null``."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class NeverType(Type):
    """The empty type (``[]`` is ``never[]``); assignable to everything."""

    def __str__(self) -> str:
        return "never"


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class ErrorType(Type):
    """The error type (docs/spec/LANGUAGE.md §3): assignable to and from everything, silences
    follow-ups."""

    def __str__(self) -> str:
        return "<error>"


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class ListType(Type):
    """``T[]``."""

    elem: Type

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class OptionalType(Type):
    """``T?`` — T or null (an optional object field may also be absent)."""

    inner: Type

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class UnionType(Type):
    """``A | B | …`` (members are a tuple, at least two, no nested unions)."""

    members: tuple[Type, ...]

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, eq=False)  # not frozen: faster __init__; __eq__/__hash__ below
class LiteralType(Type):
    """A literal type: ``"low"``, ``1``, ``true``.  The type of a plain literal expression too.

    ``fresh`` marks the type of a literal *expression* (TypeScript's "fresh literal type"): only
    fresh literals are widened to their base type by an unannotated ``let``; a literal type that
    was declared (``type S = "a" | "b"``) keeps its members through ``let``, ``filter`` and the
    like.  ``fresh`` takes no part in equality.
    """

    value: str | int | float | bool
    fresh: bool = False

    @property
    def base(self) -> Prim:
        """The primitive type the literal belongs to."""
        v = self.value
        base = _BASES.get(type(v))
        if base is not None:
            return base
        if isinstance(v, bool):
            return BOOL
        if isinstance(v, int):
            return INT
        if isinstance(v, float):
            return NUMBER
        return TEXT

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LiteralType)
            and type(self.value) is type(other.value)
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((type(self.value).__name__, self.value))

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True)  # not frozen (faster __init__); own __hash__ below
class Field:
    """A field of an object type.

    ``optional`` is true when the field's written type is ``T?`` (then ``type`` is the
    :class:`OptionalType` and the field may be absent).  ``constraints`` maps a constraint name to
    its evaluated arguments: ``{"range": (0, 1), "length": (1, 80), "pattern": ("^x",),
    "format": ("uri",)}``.  ``span`` is the field declaration's span (for notes), if known.
    """

    type: Type
    optional: bool = False
    constraints: dict[str, tuple[Any, ...]] = field(default_factory=dict, compare=False, hash=False)
    doc: str | None = field(default=None, compare=False)
    span: Any = field(default=None, compare=False, repr=False)

    def __hash__(self) -> int:
        return hash((self.type, self.optional))


@dataclass(slots=True, eq=False)
class ObjectType(Type):
    """A closed object type: inline ``{ f: T }`` (``name is None``) or the body of ``type N {…}``.

    ``fields`` keeps declaration order.  Equality is structural on the fields (names, types,
    optionality) plus the name.
    """

    fields: dict[str, Field]
    name: str | None = None
    doc: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectType):
            return False
        return self.name == other.name and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.fields)))

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class MapType(Type):
    """``map<T>``: an object with text keys and T values."""

    value: Type

    def __str__(self) -> str:
        return type_str(self)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class NamedRef(Type):
    """A reference to the named object type ``name`` (``type name { … }``), resolved through
    :meth:`TypeEnv.resolve`."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class VerdictType(Type):
    """``Verdict`` — ``{ passed: bool, failures: text[] }``, the type of ``verify``; not
    schema-generatable."""

    def __str__(self) -> str:
        return "Verdict"


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class ExternType(Type):
    """``extern type N``: opaque, only assignable to itself; not schema-generatable."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class RangeType(Type):
    """``lo..hi`` (inclusive); ``elem`` is ``int`` or ``number``."""

    elem: Type

    def __str__(self) -> str:
        return f"range<{type_str(self.elem)}>"


@dataclass(slots=True, unsafe_hash=True)  # not frozen: faster __init__
class UseType(Type):
    """A ``use`` alias (``kind`` is ``"agent"`` or ``"team"``); only an agent target."""

    kind: str
    alias: str

    def __str__(self) -> str:
        return f"{self.kind}({self.alias})"


TEXT = Prim("text")
INT = Prim("int")
NUMBER = Prim("number")
BOOL = Prim("bool")
PATH = Prim("path")
MEMBER = Prim("member")
DURATION = Prim("duration")
JSON = Prim("json")
NULL = Prim("null")
NEVER = NeverType()
ERROR = ErrorType()
#: the base type of a literal by the class of its value (:attr:`LiteralType.base`)
_BASES: dict[type, Prim] = {bool: BOOL, int: INT, float: NUMBER, str: TEXT}
VERDICT = VerdictType()

#: built-in type names → types
PRIMS: dict[str, Type] = {
    p.name: p for p in (TEXT, INT, NUMBER, BOOL, PATH, MEMBER, DURATION, JSON, NULL)
}

#: the structure of ``Verdict`` (for member access)
VERDICT_OBJECT = ObjectType(
    {"passed": Field(BOOL), "failures": Field(ListType(TEXT))},
    name="Verdict",
)


@dataclass(slots=True)
class TypeEnv:
    """Named types of one module.

    - ``objects``: name → :class:`ObjectType` for ``type N { … }`` (the body; ``name`` set);
    - ``aliases``: name → the resolved aliased type for ``type N = T`` (:data:`ERROR` for a cyclic
      or broken alias);
    - ``externs``: name → :class:`ExternType` for ``extern type N``;
    - ``docs``: name → doc comment of the declaration.
    """

    objects: dict[str, ObjectType] = field(default_factory=dict)
    aliases: dict[str, Type] = field(default_factory=dict)
    externs: dict[str, ExternType] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)

    def resolve(self, t: Type) -> Type:
        """Return ``t`` with a top-level :class:`NamedRef` replaced by its object type
        (:data:`ERROR` when the name is unknown).  Nested types are left as they are."""
        seen = 0
        while isinstance(t, NamedRef):
            if t.name in self.objects:
                return self.objects[t.name]
            if t.name in self.aliases:
                t = self.aliases[t.name]
            else:
                return ERROR
            seen += 1
            if seen > 100:
                return ERROR
        return t

    def names(self) -> set[str]:
        """Every declared type name (for "did you mean")."""
        return set(self.objects) | set(self.aliases) | set(self.externs)


_EMPTY_ENV = TypeEnv()


def is_error(t: Type) -> bool:
    """True for the error type."""
    return isinstance(t, ErrorType)


def strip_optional(t: Type, env: TypeEnv | None = None) -> Type:
    """``T?`` → ``T``; removes ``null`` from a union; other types unchanged."""
    env = env or _EMPTY_ENV
    r = env.resolve(t) if isinstance(t, NamedRef) else t
    if isinstance(r, OptionalType):
        return r.inner
    if isinstance(r, UnionType):
        rest = [m for m in r.members if not (type(m) is Prim and m.name == "null")]
        if len(rest) != len(r.members):
            return make_union(rest)
    if type(r) is Prim and r.name == "null":
        return NEVER
    return t


def make_optional(t: Type) -> Type:
    """``T?`` (idempotent; ``null?`` is ``null``; the error type stays the error type)."""
    if isinstance(t, (OptionalType, ErrorType)) or (
        type(t) is Prim and (t.name == "null" or t.name == "json")
    ):
        return t
    return OptionalType(t)


def make_union(members: list[Type]) -> Type:
    """The union of ``members``, flattened and de-duplicated (a single member is returned as
    is; none gives :data:`NEVER`; any error member gives :data:`ERROR`)."""
    flat: list[Type] = []
    seen: set[Type] = set()  # hashable members: de-duplicated in linear time (10,000 literals)
    for m in members:
        if isinstance(m, ErrorType):
            return ERROR
        parts = m.members if isinstance(m, UnionType) else (m,)
        for p in parts:
            if isinstance(p, NeverType):
                continue
            try:
                if p in seen:
                    continue
                seen.add(p)
            except TypeError:  # an unhashable member: compare with the others
                if p in flat:
                    continue
            flat.append(p)
    if not flat:
        return NEVER
    if len(flat) == 1:
        return flat[0]
    return UnionType(tuple(flat))


def is_numeric(t: Type, env: TypeEnv | None = None) -> bool:
    """``int``, ``number`` or a numeric literal (or a union of them)."""
    if type(t) is Prim:
        return t.name == "int" or t.name == "number"
    env = env or _EMPTY_ENV
    t = env.resolve(t)
    if type(t) is Prim:
        return t.name == "int" or t.name == "number"
    if type(t) is LiteralType:
        return t.base.name in ("int", "number")
    if isinstance(t, UnionType):
        return all(is_numeric(m, env) for m in t.members)
    return False


def is_textual(t: Type, env: TypeEnv | None = None) -> bool:
    """``text``, ``path``, ``member`` or a string literal (or a union of them)."""
    if type(t) is Prim:
        return t.name == "text" or t.name == "path" or t.name == "member"
    env = env or _EMPTY_ENV
    t = env.resolve(t)
    if type(t) is Prim:
        return t.name == "text" or t.name == "path" or t.name == "member"
    if type(t) is LiteralType:
        return t.base.name == "text"
    if isinstance(t, UnionType):
        return all(is_textual(m, env) for m in t.members)
    return False


def widen(t: Type) -> Type:
    """Replace literal types by their base type, deeply (what an unannotated ``let`` binds)."""
    if type(t) is Prim or type(t) is NamedRef:
        return t
    if isinstance(t, LiteralType):
        return t.base if t.fresh else t
    if isinstance(t, ListType):
        return ListType(widen(t.elem))
    if isinstance(t, OptionalType):
        return OptionalType(widen(t.inner))
    if isinstance(t, UnionType):
        return make_union([widen(m) for m in t.members])
    if isinstance(t, MapType):
        return MapType(widen(t.value))
    if isinstance(t, ObjectType) and t.name is None:
        return ObjectType(
            {
                k: Field(widen(f.type), f.optional, f.constraints, f.doc, f.span)
                for k, f in t.fields.items()
            }
        )
    return t


def mentions_never(t: Type) -> bool:
    """True when ``t`` was inferred from values that held nothing somewhere: it is ``never`` or
    has ``never`` as an element, map value, field, optional or union member (``[]`` is
    ``never[]``, ``{ items: [] }`` is ``{ items: never[] }``, a block that always fails is
    ``never``).  Such a type says nothing about what a later value may be, so it is never used as
    the type another expression is expected to have (a ``catch`` fallback, a ``reduce`` body):
    the checker joins instead (docs/decisions.md "Expected types: array `+`, and `never` is no
    expectation").  Named types
    are declared, so they are not looked into."""
    if isinstance(t, NeverType):
        return True
    if isinstance(t, ListType):
        return mentions_never(t.elem)
    if isinstance(t, OptionalType):
        return mentions_never(t.inner)
    if isinstance(t, MapType):
        return mentions_never(t.value)
    if isinstance(t, UnionType):
        return any(mentions_never(m) for m in t.members)
    if isinstance(t, ObjectType) and t.name is None:
        return any(mentions_never(f.type) for f in t.fields.values())
    return False


def join(types: list[Type], env: TypeEnv | None = None) -> Type:
    """The common type of several values (array literal elements, a body's returns):
    the first type, widened, that all the others are assignable to; else their union
    (docs/spec/LANGUAGE.md §3).  An empty list gives :data:`NEVER`."""
    env = env or _EMPTY_ENV
    types = [t for t in types if not isinstance(t, NeverType)]
    if not types:
        return NEVER
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    # a string literal counts as assignable to `path` and `member` (§3), whatever its position:
    # `["notes.md", input.kb]` is a `path[]` like `[input.kb, "notes.md"]`, not a `text[]`
    for cand in types:
        w = widen(cand)
        if (w == PATH or w == MEMBER) and all(assignable(t, w, env) for t in types):
            return w
    for cand in types:
        w = widen(cand)
        if all(assignable(t, w, env) for t in types):
            return w
    # a mix of T and null is T?
    non_null = [t for t in types if not (type(t) is Prim and t.name == "null")]
    if len(non_null) < len(types):
        inner = join(non_null, env)
        if not isinstance(inner, UnionType):
            return make_optional(inner)
    return make_union([widen(t) for t in types])


def overlaps(a: Type, b: Type, env: TypeEnv | None = None) -> bool:
    """True when a value of type ``a`` can equal a value of type ``b`` — when ``==`` between
    them can be true (the `no-overlap` diagnostic, TypeScript's "no overlap").

    Literal types overlap only when equal (``1`` and ``1.0`` are equal numbers); a literal
    overlaps its base type (an integral number literal ``int``); primitive types overlap within
    their kind (texts — ``text``, ``path``, ``member``, ``duration`` —, numbers, booleans);
    ``null`` overlaps only a type that admits it; unions and optionals overlap when a member
    does; object types overlap unless a field required in both has types that do not. Anything
    else (``json``, errors, arrays, maps, extern types) is assumed to overlap.
    """
    return _overlaps(a, b, env or _EMPTY_ENV, set())


_KINDS = {"text": "text", "path": "text", "member": "text", "duration": "text"}
_KINDS.update({"int": "number", "number": "number", "bool": "bool", "null": "null"})


def _overlaps(a: Type, b: Type, env: TypeEnv, seen: set[Any]) -> bool:
    a, b = env.resolve(a), env.resolve(b)
    if isinstance(a, (ErrorType, NeverType)) or isinstance(b, (ErrorType, NeverType)):
        return True
    if (type(a) is Prim and a.name == "json") or (type(b) is Prim and b.name == "json"):
        return True
    for x, y in ((a, b), (b, a)):
        if isinstance(x, OptionalType):
            return _overlaps(NULL, y, env, seen) or _overlaps(x.inner, y, env, seen)
        if isinstance(x, UnionType):
            return any(_overlaps(m, y, env, seen) for m in x.members)
    if isinstance(a, LiteralType) and isinstance(b, LiteralType):
        if isinstance(a.value, bool) or isinstance(b.value, bool):
            return a == b
        if isinstance(a.value, str) or isinstance(b.value, str):
            return a == b
        return a.value == b.value  # 1 == 1.0
    for x, y in ((a, b), (b, a)):
        if isinstance(x, LiteralType):
            if not isinstance(y, Prim):
                return False
            kind = _KINDS.get(x.base.name)
            if y.name == "int" and isinstance(x.value, float):  # `y` is a Prim
                return x.value.is_integer()
            return kind == _KINDS.get(y.name)
    if isinstance(a, Prim) and isinstance(b, Prim):
        return _KINDS.get(a.name, a.name) == _KINDS.get(b.name, b.name)
    if isinstance(a, ObjectType) and isinstance(b, ObjectType):
        key = (id(a), id(b))
        if key in seen:
            return True
        seen.add(key)
        for name, fa in a.fields.items():
            fb = b.fields.get(name)
            if fb is not None and not fa.optional and not fb.optional:
                if not _overlaps(fa.type, fb.type, env, seen):
                    return False
        return True
    if (type(a) is Prim and a.name == "null") or (type(b) is Prim and b.name == "null"):
        return False  # null against an object, array or map
    return True


def finite_values(t: Type, env: TypeEnv | None = None, limit: int = 50) -> list[Any] | None:
    """The values a type allows when it is a small finite set — a literal type, ``bool``,
    ``null`` and unions and optionals of those — in declaration order; else None."""
    env = env or _EMPTY_ENV
    out: list[Any] = []

    def add(x: Type) -> bool:
        x = env.resolve(x)
        vals: list[Any]
        if isinstance(x, LiteralType):
            vals = [x.value]
        elif x == BOOL:
            vals = [True, False]
        elif x == NULL:
            vals = [None]
        elif isinstance(x, OptionalType):
            return add(x.inner) and add(NULL)
        elif isinstance(x, UnionType):
            return all(add(m) for m in x.members)
        else:
            return False
        for v in vals:
            if not any(type(v) is type(o) and v == o for o in out):
                out.append(v)
        return len(out) <= limit

    return out if add(t) else None


def literal_str(v: Any) -> str:
    """A value of a literal type as written in `.flow` (``"bug"``, ``3``, ``true``, ``null``)."""
    return "null" if v is None else _literal_str(v)


#: What one :func:`assignable` call has decided so far: ``(id(src), id(dst))`` → ``(src, dst,
#: fits)`` (the two types kept so that their ids stay theirs for the call). Without it a literal
#: nested N levels deep against a recursive union (``type Expr = Lit | Add | Mul`` with ``Add {
#: l: Expr, r: Expr }``) is checked again under every member tried at every level: 2^N.
_Memo = dict[tuple[int, int], tuple["Type", "Type", bool]]


def _remember(
    memo: _Memo, key: tuple[int, int], src: Type, dst: Type, fits: bool, seen: set[Any]
) -> None:
    """Keep a decision that holds whatever the call goes on to decide: a "no" always (a pair
    assumed to fit, ``seen``, only ever turns a "no" into a "yes"), a "yes" only when it was
    reached with no such assumption open (a "yes" under one holds only if that pair fits)."""
    if not fits or not seen:
        memo[key] = (src, dst, fits)


def assignable(src: Type, dst: Type, env: TypeEnv | None = None) -> bool:
    """True when a value of type ``src`` may be used where ``dst`` is expected
    (docs/spec/LANGUAGE.md §3).

    ``int`` → ``number``; ``path``/``member`` → ``text``; ``T`` → ``T?``; ``null`` → ``T?``;
    literal → its base type; a *string literal* → ``path``/``member``; arrays and maps are
    covariant; ``never`` → everything; ``json`` → everything and everything → ``json``;
    the error type → everything and everything → the error type; object types are structural
    and closed (every required field present and assignable, no unknown field); a union source
    needs every member assignable, a union target any member.
    """
    if src is dst:
        return True
    if type(dst) is Prim and (type(src) is Prim or type(src) is LiteralType):
        return _prim_fits(src, dst)
    return _assignable(src, dst, env or _EMPTY_ENV, set(), {})


def _prim_fits(src: Prim | LiteralType, dst: Prim) -> bool:
    """:func:`_assignable` of a primitive or literal type to a primitive one, decided on their
    names (the most frequent question: a literal or a primitive where a primitive is
    expected), with the same answer as the general rules below."""
    d = dst.name
    if type(src) is LiteralType:
        if d == "json":
            return True
        base = src.base.name
        if base == "text" and (d == "path" or d == "member"):
            return True  # a string literal is a path or member
    else:
        base = src.name  # type: ignore[union-attr]
    return (
        base == d
        or d == "json"
        or base == "json"
        or (base == "int" and d == "number")
        or ((base == "path" or base == "member") and d == "text")
    )


def _assignable(src: Type, dst: Type, env: TypeEnv, seen: set[Any], memo: _Memo) -> bool:
    if src is dst:
        return True
    if type(dst) is Prim and (type(src) is Prim or type(src) is LiteralType):
        return _prim_fits(src, dst)
    if src == dst:
        return True
    if isinstance(src, (ErrorType, NeverType)) or isinstance(dst, ErrorType):
        return True
    if (type(dst) is Prim and dst.name == "json") or (type(src) is Prim and src.name == "json"):
        return True
    if isinstance(src, NamedRef) and isinstance(dst, NamedRef):
        key = (src.name, dst.name)
        if key in seen:
            return True
        seen = seen | {key}
    if isinstance(src, NamedRef):
        return _assignable(env.resolve(src), dst, env, seen, memo)
    if isinstance(dst, NamedRef):
        return _assignable(src, env.resolve(dst), env, seen, memo)
    if isinstance(src, UnionType):
        return all(_assignable(m, dst, env, seen, memo) for m in src.members)
    if isinstance(dst, OptionalType):
        if type(src) is Prim and src.name == "null":
            return True
        if isinstance(src, OptionalType):
            return _assignable(src.inner, dst.inner, env, seen, memo)
        return _assignable(src, dst.inner, env, seen, memo)
    if isinstance(dst, UnionType):
        if type(src) is Prim and src.name == "null" and NULL in dst.members:
            return True
        if isinstance(src, OptionalType):
            return _assignable(NULL, dst, env, seen, memo) and _assignable(
                src.inner, dst, env, seen, memo
            )
        pair = (id(src), id(dst))
        known = memo.get(pair)
        if known is not None:
            return known[2]
        fits = any(_assignable(src, m, env, seen, memo) for m in dst.members)
        _remember(memo, pair, src, dst, fits, seen)
        return fits
    if isinstance(src, OptionalType):
        return False
    if isinstance(src, LiteralType):
        if isinstance(dst, LiteralType):
            return src == dst or (
                # 1 is assignable to the literal 1.0
                src.base in (INT, NUMBER) and dst.base in (INT, NUMBER) and src.value == dst.value
            )
        if src.base == TEXT and dst in (PATH, MEMBER):
            return True
        return _assignable(src.base, dst, env, seen, memo)
    if isinstance(src, Prim) and isinstance(dst, Prim):
        if src == INT and dst == NUMBER:
            return True
        if src in (PATH, MEMBER) and dst == TEXT:
            return True
        return False
    if isinstance(src, ListType) and isinstance(dst, ListType):
        return _assignable(src.elem, dst.elem, env, seen, memo)
    if isinstance(src, MapType) and isinstance(dst, MapType):
        return _assignable(src.value, dst.value, env, seen, memo)
    if isinstance(src, ObjectType) and isinstance(dst, MapType):
        return all(_assignable(f.type, dst.value, env, seen, memo) for f in src.fields.values())
    if isinstance(src, VerdictType):
        return isinstance(dst, VerdictType) or (
            isinstance(dst, ObjectType) and _assignable(VERDICT_OBJECT, dst, env, seen, memo)
        )
    if isinstance(src, ObjectType) and isinstance(dst, ObjectType):
        pair = (id(src), id(dst))
        known = memo.get(pair)
        if known is not None:
            return known[2]
        fits = _object_fits(src, dst, env, seen, memo)
        _remember(memo, pair, src, dst, fits, seen)
        return fits
    if isinstance(src, RangeType) and isinstance(dst, RangeType):
        return _assignable(src.elem, dst.elem, env, seen, memo)
    return False


def _shallow(t: Type) -> bool:
    """Whether ``t`` is decided without walking a nested type (a literal, a primitive)."""
    return isinstance(t, (LiteralType, Prim))


def _object_fits(
    src: ObjectType, dst: ObjectType, env: TypeEnv, seen: set[Any], memo: _Memo
) -> bool:
    """``not object_mismatches(src, dst)``, deciding the cheap parts first and stopping at the
    first problem: the keys, then the fields a literal or a primitive decides (the tag of a
    discriminated union, ``kind: "add"``), and only then the nested ones."""
    fields = dst.fields
    for name, f in fields.items():
        if name not in src.fields and not f.optional:
            return False
    for name in src.fields:
        if name not in fields:
            return False
    nested: list[tuple[Field, Field]] = []
    for name, sf in src.fields.items():
        f = fields[name]
        if sf.optional and not f.optional:
            return False
        if _shallow(sf.type) or _shallow(f.type):
            if not _assignable(sf.type, f.type, env, seen, memo):
                return False
        else:
            nested.append((sf, f))
    return all(_assignable(sf.type, f.type, env, seen, memo) for sf, f in nested)


def object_mismatches(
    src: ObjectType, dst: ObjectType, env: TypeEnv | None = None, seen: set[Any] | None = None
) -> list[tuple[str, str]]:
    """Why ``src`` is not assignable to ``dst``: a list of ``(kind, field)`` with kind
    ``"missing"``, ``"unknown"`` or ``"type"``; empty when assignable."""
    env = env or _EMPTY_ENV
    seen = seen if seen is not None else set()
    memo: _Memo = {}
    problems: list[tuple[str, str]] = []
    for name, f in dst.fields.items():
        sf = src.fields.get(name)
        if sf is None:
            if not f.optional:
                problems.append(("missing", name))
        elif not _assignable(sf.type, f.type, env, seen, memo):
            problems.append(("type", name))
        elif sf.optional and not f.optional:
            problems.append(("type", name))
    for name in src.fields:
        if name not in dst.fields:
            problems.append(("unknown", name))
    return problems


def type_words(t: Type) -> str:
    """``t`` in a message: ```T``` (:func:`type_str` in backticks), except the long union of
    run-time error codes a ``catch``'s ``e.code`` has (docs/reference/errors-as-values.md),
    named shortly, "the error code (one of the run-time codes)", rather than listed."""
    inner = t.inner if isinstance(t, OptionalType) else t
    if (
        isinstance(inner, UnionType)
        and len(inner.members) >= _LONG_CODE_UNION
        and all(
            isinstance(m, LiteralType) and isinstance(m.value, str) and m.value in _ERROR_CODES
            for m in inner.members
        )
    ):
        return "the error code (one of the run-time codes)" + (
            " or `null`" if inner is not t else ""
        )
    return f"`{type_str(t)}`"


#: from this many members on, a union of error codes is named, not listed (a `catch on [a, b]`
#: narrows `e.code` to a short union, listed)
_LONG_CODE_UNION = 6


def type_str(t: Type) -> str:
    """Spell ``t`` as it would be written in `.flow` source (inline objects abbreviated)."""
    return _type_str(t, 0)


def _literal_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        import json

        return json.dumps(v, ensure_ascii=False)
    return repr(v)


def _type_str(t: Type, depth: int) -> str:
    if isinstance(t, Prim):
        return t.name
    if isinstance(t, NeverType):
        return "never"
    if isinstance(t, ErrorType):
        return "<error>"
    if isinstance(t, (NamedRef, ExternType)):
        return t.name
    if isinstance(t, VerdictType):
        return "Verdict"
    if isinstance(t, LiteralType):
        return _literal_str(t.value)
    if isinstance(t, ListType):
        inner = _type_str(t.elem, depth)
        if isinstance(t.elem, (UnionType, OptionalType)):
            inner = f"({inner})"
        return inner + "[]"
    if isinstance(t, OptionalType):
        inner = _type_str(t.inner, depth)
        if isinstance(t.inner, UnionType):
            inner = f"({inner})"
        return inner + "?"
    if isinstance(t, UnionType):
        return " | ".join(_type_str(m, depth) for m in t.members)
    if isinstance(t, MapType):
        return f"map<{_type_str(t.value, depth)}>"
    if isinstance(t, ObjectType):
        if t.name:
            return t.name
        if depth > 1:
            return "{ … }"
        parts = [f"{k}: {_type_str(f.type, depth + 1)}" for k, f in list(t.fields.items())[:6]]
        if len(t.fields) > 6:
            parts.append("…")
        return "{ " + ", ".join(parts) + " }" if parts else "{}"
    if isinstance(t, RangeType):
        return f"range<{_type_str(t.elem, depth)}>"
    if isinstance(t, UseType):
        return f"{t.kind}({t.alias})"
    return type(t).__name__


def schema_problem(t: Type, env: TypeEnv | None = None) -> str | None:
    """Why ``t`` is not schema-generatable (docs/spec/LANGUAGE.md §3), or None when it is.

    ``Verdict``, ``extern type`` names, ranges and ``use`` aliases, or any type containing one
    (through named types too), have no JSON Schema.
    """
    return _schema_problem(t, env or _EMPTY_ENV, set())


def _schema_problem(t: Type, env: TypeEnv, seen: set[str]) -> str | None:
    if isinstance(t, VerdictType):
        return "`Verdict` is a verification type"
    if isinstance(t, ExternType):
        return f"`{t.name}` is an extern type"
    if isinstance(t, (RangeType, UseType)):
        return f"`{type_str(t)}` is not a data type"
    if isinstance(t, NamedRef):
        if t.name in seen:
            return None
        seen.add(t.name)
        inner = env.resolve(t)
        problem = _schema_problem(inner, env, seen)
        if problem and isinstance(inner, ObjectType):
            return f"`{t.name}` contains a type with no schema: {problem}"
        return problem
    if isinstance(t, ListType):
        return _schema_problem(t.elem, env, seen)
    if isinstance(t, OptionalType):
        return _schema_problem(t.inner, env, seen)
    if isinstance(t, MapType):
        return _schema_problem(t.value, env, seen)
    if isinstance(t, UnionType):
        for m in t.members:
            p = _schema_problem(m, env, seen)
            if p:
                return p
    if isinstance(t, ObjectType):
        for name, f in t.fields.items():
            p = _schema_problem(f.type, env, seen)
            if p:
                return f"field `{name}`: {p}" if t.name is None else p
    return None
