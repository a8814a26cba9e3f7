"""The checker's ``parallel [limit N] { name: expr, … }`` block (docs/reference/control.md
"parallel blocks"): each branch typed as an object entry, the block's type the object of the
branches' types by name; branch names unique identifiers (a step path names each branch);
``limit`` checked as a ``parallel map``'s; fewer than two branches a warning."""

from __future__ import annotations

import re

from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.types import (
    ERROR,
    ErrorType,
    Field,
    ObjectType,
    Type,
    assignable,
    strip_optional,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note
from agentflow.core.vocabulary import MAX_CONCURRENCY
from agentflow.grammar import ast

#: a branch name: an identifier, as a step path segment and an event's name show it
_BRANCH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ParallelChecks(CheckerShared):
    """The typing rule of ``parallel { … }`` blocks."""

    def visit_ParallelExpr(self, e: ast.ParallelExpr, hint: Type | None) -> Type:
        """``parallel [limit N] { a: A, b: B }`` has type ``{ a: A, b: B }``; ``limit`` is an
        `int` from 1 to ``MAX_CONCURRENCY`` (a constant checked here, any other the run
        checks), as a ``parallel map``'s."""
        if e.limit is not None:
            self.count_setting(
                e.limit,
                "`limit`",
                MAX_CONCURRENCY,
                hint="a `parallel` block's `limit` is how many of its branches run at once",
            )
        h = self._hint_parts(hint)
        fields: dict[str, Field] = {}
        first: dict[str, ast.ObjectEntry] = {}
        bad = False
        for branch in e.branches:
            fh = None
            if isinstance(h, ObjectType) and branch.key in h.fields:
                fh = h.fields[branch.key].type
            vt = self.infer(branch.value, fh)
            if not _BRANCH_NAME.fullmatch(branch.key):
                self.report(
                    D.SYNTAX_ERROR,
                    f"a `parallel` branch is named by an identifier, not `{branch.key}`",
                    branch.key_span,
                    hint="name the branch with letters, digits and `_` (`style: …`): the "
                    "name is its field in the block's value and its place in a run's steps",
                )
                bad = True
                continue
            if branch.key in first:
                self.report(
                    D.DUPLICATE_FIELD,
                    f"branch `{branch.key}` is given twice in this `parallel` block",
                    branch.key_span,
                    notes=[Note("first given here", first[branch.key].key_span)],
                    hint="give each branch its own name: the block's value has one field "
                    "per branch",
                )
                continue
            first[branch.key] = branch
            fields[branch.key] = Field(vt, False, {}, None, branch.key_span)
        if len(e.branches) < 2:
            span = e.keyword_span or e.span
            what = "one branch" if e.branches else "no branch"
            self.report(
                D.PARALLEL_ONE_BRANCH,
                f"this `parallel` block has {what}: nothing runs side by side",
                span,
                hint="add the branches that should run at the same time, or write the "
                "branch's expression alone",
            )
        if bad or any(isinstance(f.type, ErrorType) for f in fields.values()):
            return ERROR
        obj = ObjectType(fields)
        if hint is not None and isinstance(h, ObjectType) and assignable(obj, h, self.env):
            return strip_optional(hint, self.env)
        return obj
