"""The names a test's ``stub`` lines give (docs/reference/testing.md "stubs"), as references
of what they name: ``stub stage NAME`` a stage, ``stub agent NAME`` a ``use agent`` alias,
``stub tool NAME`` a tool, ``stub step NAME`` the ``let NAME`` of a stage and ``stub ask NAME``
the ``let NAME = ask …`` (else the stage ``NAME`` whose asks it answers) — resolved as the
checker resolves them (:func:`agentflow.compiler.check_stub_steps.ask_targets`), so that hover,
definition, references and rename reach a stub's name and a rename edits it too.  The ``B`` of
``stub step NAME.B`` names branch ``B`` of each ``let NAME = parallel { … }`` that has one
(:func:`branches`), as the checker's ``_branch_targets`` does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentflow.core.spans import Span
from agentflow.grammar import ast

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


def stub_of(path: list[ast.Node]) -> ast.TestStub | None:
    """The stub whose target name ends ``path`` (the nodes under the cursor), or None."""
    if len(path) < 2:
        return None
    node, parent = path[-1], path[-2]
    if isinstance(parent, ast.TestStub) and parent.target is node:
        return parent
    return None


def stages(a: Analysis) -> list[ast.StageDecl]:
    """The stages of the document, in source order."""
    return [i for i in a.module.items if isinstance(i, ast.StageDecl)]


def step_lets(a: Analysis, name: str, asks_only: bool = False) -> list[ast.LetStmt]:
    """Every ``let name = …`` inside a stage (with ``asks_only``: bound to an ``ask``)."""
    out: list[ast.LetStmt] = []
    for stage in stages(a):
        for n in ast.walk(stage.body):
            if isinstance(n, ast.LetStmt) and n.name.name == name:
                if not asks_only or isinstance(n.value, ast.AskExpr):
                    out.append(n)
    return out


def resolve(a: Analysis, stub: ast.TestStub) -> tuple[str, Any] | None:
    """``(kind, payload)`` of what ``stub`` names, in the terms of
    :func:`agentflow.lsp.locate.target`: ``stagedecl`` (a :class:`ast.StageDecl`), ``usedecl``
    (the ``use agent``), ``tool`` (its signature) or ``letdecl`` (the first ``let`` it names);
    None when it names nothing."""
    name = stub.target.name
    if stub.kind == "agent":
        for item in a.module.items:
            if isinstance(item, ast.UseDecl) and item.kind == "agent" and item.alias.name == name:
                return "usedecl", item
        return None
    if stub.kind == "tool":
        sig = a.result.tool_decls.get(name) or a.result.tools.get(name)
        return ("tool", sig) if sig is not None else None
    lets = step_lets(a, name, asks_only=stub.kind == "ask")
    if lets:
        return "letdecl", lets[0]
    if stub.kind in ("stage", "ask"):
        for stage in stages(a):
            if stage.name.name == name:
                return "stagedecl", stage
    return None


def _stubs(a: Analysis) -> list[ast.TestStub]:
    return [n for n in ast.walk(a.module) if isinstance(n, ast.TestStub)]


def names_of(a: Analysis, decl: Any) -> list[Span]:
    """The spans of the stub names that name ``decl`` — a :class:`ast.StageDecl`, a
    :class:`ast.UseDecl`, a :class:`ast.LetStmt` of a stage or a tool's ``ToolSig``."""
    out: list[Span] = []
    for stub in _stubs(a):
        found = resolve(a, stub)
        if found is None:
            continue
        if found[1] is decl:
            out.append(stub.target.span)
        elif found[0] == "letdecl" and isinstance(decl, ast.LetStmt):
            # `stub step x` names every `let x` of the stages
            if decl in step_lets(a, stub.target.name, asks_only=stub.kind == "ask"):
                out.append(stub.target.span)
    return out


def shared_let(a: Analysis, let: ast.LetStmt) -> bool:
    """Whether a stub names ``let`` and another stage's ``let`` of the same name too (renaming
    one would leave the stub naming the other)."""
    name = let.name.name
    return len(step_lets(a, name)) > 1 and any(
        stub.kind in ("step", "ask") and stub.target.name == name for stub in _stubs(a)
    )


def branch_stub_at(a: Analysis, offset: int) -> ast.TestStub | None:
    """The ``stub step NAME.B`` whose branch name ``B`` is under ``offset`` (end inclusive), or
    None."""
    for stub in _stubs(a):
        b = stub.branch
        if stub.kind == "step" and b is not None and b.span.start <= offset <= b.span.end:
            return stub
    return None


def branches(a: Analysis, stub: ast.TestStub) -> list[ast.ObjectEntry]:
    """The branches ``stub step NAME.B`` names: branch ``B`` of every ``let NAME = parallel
    { … }`` of the stages that has one, in source order (none without a ``.B``)."""
    if stub.branch is None:
        return []
    key = stub.branch.name
    return [
        b
        for let in step_lets(a, stub.target.name)
        if isinstance(let.value, ast.ParallelExpr)
        for b in let.value.branches
        if b.key == key
    ]


def branch_names_of(a: Analysis, entry: ast.ObjectEntry) -> list[Span]:
    """The spans of the ``B`` of each ``stub step NAME.B`` that names the ``parallel`` block
    branch ``entry``."""
    return [
        stub.branch.span
        for stub in _stubs(a)
        if stub.kind == "step"
        and stub.branch is not None
        and any(b is entry for b in branches(a, stub))
    ]
