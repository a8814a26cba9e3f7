"""Types in the names the program wrote (docs/diagnostics.md "Messages"): the checker resolves
an alias (``type Sev = "low" | "high"``, ``type Pair = { a: int, b: int }``) to the structure it
stands for; this module spells such a structure back by the alias's name, for the checker's
messages and for the language server's hover, completion and outline alike.

- :func:`spelt` — ``t`` as :func:`~agentflow.compiler.types.type_str` spells it, each part that
  is the type of exactly one alias said by that name;
- :func:`spelt_words` — the same as :func:`~agentflow.compiler.types.type_words` (in backticks;
  the long union of run-time codes named shortly);
- :func:`alias_keys` / :func:`alias_named` — the pieces, for a caller spelling many types.

Only an alias of a union or of an inline object type is named back: an alias of anything else
(``type Email = text``) is not (every `text` is not an `Email`), nor are two aliases of one
structure (which one a value has cannot be told).
"""

from __future__ import annotations

from agentflow.compiler import types as T
from agentflow.core.vocabulary import OUTCOME_TYPE

__all__ = [
    "alias_keys",
    "alias_named",
    "aliases_said",
    "is_outcome",
    "outcome_value_type",
    "spelt",
    "spelt_words",
]

#: ``(alias name, key)`` pairs (:func:`alias_keys`)
AliasKeys = list[tuple[str, object]]


def is_outcome(t: T.Type) -> bool:
    """True for an ``Outcome<T>`` type."""
    return (
        isinstance(t, T.ObjectType)
        and t.name is not None
        and t.name.startswith(OUTCOME_TYPE + "<")
        and set(t.fields) == {"ok", "value", "error"}
    )


def outcome_value_type(t: T.Type) -> T.Type | None:
    """``T`` of ``Outcome<T>`` (None for another type)."""
    if not is_outcome(t):
        return None
    assert isinstance(t, T.ObjectType)
    v = t.fields["value"].type
    return v.inner if isinstance(v, T.OptionalType) else v


def spelt(env: T.TypeEnv, t: T.Type) -> str:
    """``t`` in the names the program wrote: each part that is the type of one alias of
    ``env`` (``type Sev = "a" | "b"``, declared or imported under the name it has here) is
    spelt by that name (:func:`alias_named`), the rest as
    :func:`~agentflow.compiler.types.type_str` spells it: ``Sev``, ``Sev[]``, ``Sev?``,
    ``{ level: Sev }``, ``Outcome<Sev>``."""
    return T.type_str(alias_named(t, alias_keys(env)))


def spelt_words(env: T.TypeEnv, t: T.Type) -> str:
    """``t`` in a message, in backticks and in the names the program wrote (:func:`spelt`);
    the long union of run-time error codes stays "the error code (one of the run-time codes)"
    (:func:`~agentflow.compiler.types.type_words`)."""
    return T.type_words(alias_named(t, alias_keys(env)))


def aliases_said(env: T.TypeEnv, t: T.Type) -> list[tuple[str, T.Type]]:
    """The aliases :func:`spelt` says ``t`` with, in order, each with the type it stands for:
    ``[("Sev", "low" | "high")]`` for ``Sev[]`` — what a message adds so that the name does
    not hide what it allows (``Sev`` is ``"low" | "high"``)."""
    keys = alias_keys(env)
    names = {name for name, _ in keys}
    found: list[str] = []
    _named_refs(alias_named(t, keys), found)
    return [(n, env.aliases[n]) for n in dict.fromkeys(found) if n in names]


def _named_refs(t: T.Type, out: list[str]) -> None:
    if isinstance(t, T.NamedRef):
        out.append(t.name)
    elif isinstance(t, T.UnionType):
        for m in t.members:
            _named_refs(m, out)
    elif isinstance(t, T.ListType | T.RangeType):
        _named_refs(t.elem, out)
    elif isinstance(t, T.OptionalType):
        _named_refs(t.inner, out)
    elif isinstance(t, T.MapType):
        _named_refs(t.value, out)
    elif isinstance(t, T.ObjectType) and t.name is None:
        for f in t.fields.values():
            _named_refs(f.type, out)


def alias_keys(env: T.TypeEnv) -> AliasKeys:
    """``(name, key)`` of ``env``'s aliases of a union (``type Sev = "low" | "high"``,
    ``type Pet = Cat | Dog``) or of an inline object type (``type V = { ok: bool }``) — the
    checker resolves an alias to that structure (:func:`_alias_key`); two names of one type are
    left out (which one a value has cannot be told), and so is an alias of anything else
    (``type Email = text``: every `text` is not an `Email`)."""
    found: dict[object, list[str]] = {}
    for name, t in env.aliases.items():
        key = _alias_key(t)
        if key is not None:
            found.setdefault(key, []).append(name)
    return [(names[0], key) for key, names in found.items() if len(names) == 1]


def _alias_key(t: T.Type) -> object | None:
    """What identifies ``t`` as the type of an alias: a union's members in any order, an inline
    object type itself; None for another type."""
    if isinstance(t, T.UnionType):
        return frozenset(t.members)
    if isinstance(t, T.ObjectType) and t.name is None and t.fields:
        return t
    return None


def alias_named(t: T.Type, aliases: AliasKeys) -> T.Type:
    """``t`` with each part that is the type of one of ``aliases`` (:func:`_alias_key`)
    replaced by a reference to its name, inside lists, optionals, maps, ranges, unions, inline
    objects and ``Outcome<…>`` too."""
    if not aliases:
        return t
    key = _alias_key(t)
    if key is not None:
        for name, k in aliases:
            if k == key:
                return T.NamedRef(name)
    if isinstance(t, T.UnionType):
        return T.UnionType(tuple(alias_named(m, aliases) for m in t.members))
    if isinstance(t, T.ListType):
        return T.ListType(alias_named(t.elem, aliases))
    if isinstance(t, T.OptionalType):
        return T.OptionalType(alias_named(t.inner, aliases))
    if isinstance(t, T.MapType):
        return T.MapType(alias_named(t.value, aliases))
    if isinstance(t, T.RangeType):
        return T.RangeType(alias_named(t.elem, aliases))
    value = outcome_value_type(t)
    if value is not None:  # `Outcome<Level>`: the name holds its value type, spelt
        return T.NamedRef(f"{OUTCOME_TYPE}<{T.type_str(alias_named(value, aliases))}>")
    if isinstance(t, T.ObjectType) and t.name is None:
        fields = {
            k: T.Field(alias_named(f.type, aliases), f.optional, f.constraints, f.doc, f.span)
            for k, f in t.fields.items()
        }
        return T.ObjectType(fields, None, t.doc)
    return t
