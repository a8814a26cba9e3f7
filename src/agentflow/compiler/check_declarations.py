"""The checker's declaration phases: every top-level item before any stage body is checked.

In the order :meth:`~agentflow.compiler.checker.Checker.check` runs them: the items that may
appear once (``flow``, ``input``, ``output``, ``deadline``, ``budget``), type names, aliases,
object types, ``use`` aliases and stage names, ``extern tool`` signatures, the ``input`` type and
the flow's settings; after the stages, the flow's output type and the ``test`` blocks
(docs/spec/LANGUAGE.md §2, §3, §7).
A mixin of :class:`~agentflow.compiler.checker.Checker`, whose state it reads and writes.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath as Path
from typing import Any

from agentflow.compiler.check_evals import check_evals
from agentflow.compiler.check_tests import check_tests
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.symbols import Symbol
from agentflow.compiler.types import (
    DURATION,
    ERROR,
    JSON,
    ErrorType,
    ExternType,
    Type,
    UseType,
    assignable,
    schema_problem,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note
from agentflow.core.vocabulary import BUILTIN_TYPES, CONTROL_STEPS
from agentflow.grammar import ast

#: the items a module may hold once, and the word that declares each
SINGLE_ITEMS: dict[type, str] = {
    ast.FlowHeader: "flow",
    ast.InputDecl: "input",
    ast.OutputDecl: "output",
    ast.DeadlineDecl: "deadline",
    ast.BudgetDecl: "budget",
}


class DeclarationChecks(CheckerShared):
    """The phases over top-level items, each a method named for what it declares or checks."""

    def collect_items(self) -> None:
        """The items to check (error items left out, their names remembered so that uses of
        them are not reported again), and the items that may appear once: a second one is a
        ``duplicate-definition``; a ``flow`` header that is not first is a ``syntax-error``."""
        self.items = [i for i in self.module.items if not isinstance(i, ast.ErrorItem)]
        for i in self.module.items:
            if isinstance(i, ast.ErrorItem):
                if i.name:
                    self.error_names.add(i.name)
                self.error_names.update(i.names)  # a broken `import { … }`
        singles: dict[type, ast.Item] = {}
        for item in self.items:
            if isinstance(
                item,
                (ast.FlowHeader, ast.InputDecl, ast.OutputDecl, ast.DeadlineDecl, ast.BudgetDecl),
            ):
                kind = type(item)
                if kind in singles:
                    word = SINGLE_ITEMS[kind]
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"`{word}` is declared twice",
                        item.span,
                        notes=[Note("first declared here", singles[kind].span)],
                    )
                else:
                    singles[kind] = item
        self.singles = singles
        header = singles.get(ast.FlowHeader)
        self.header = header if isinstance(header, ast.FlowHeader) else None
        if header is not None and self.module.items and self.module.items[0] is not header:
            # docs/spec/LANGUAGE.md §2: "optional header, first if present" — `import` items
            # may come before it (docs/decisions.md "Imports")
            first = next(i for i in self.module.items if type(i) is not ast.ImportDecl)
            if first is not header:
                self.report(
                    D.SYNTAX_ERROR,
                    "the `flow` header must be the first item of the file (after its imports)"
                    if self.imports is not None
                    else "the `flow` header must be the first item of the file",
                    header.span,
                )

    def declare_type_names(self) -> None:
        """Each ``type`` and ``extern type`` name once (a built-in name or a second definition
        is reported); aliases are noted for :meth:`resolve_aliases`, docs kept."""
        for item in self.items:
            if isinstance(item, (ast.TypeDecl, ast.ExternType)):
                name = item.name.name
                if name in BUILTIN_TYPES:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"`{name}` is a built-in type and cannot be redefined",
                        item.name.span,
                        hint=f"give your type another name, e.g. `{_other_name(name)}`, and "
                        "use that name where you meant it",
                    )
                    self.redefined_builtins.add(name)
                    continue
                if name in self.type_decls:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"type `{name}` is defined twice",
                        item.name.span,
                        notes=[Note("first defined here", self.type_decls[name].name.span)],
                    )
                    continue
                self.type_decls[name] = item
                if isinstance(item, ast.ExternType):
                    self.env.externs[name] = ExternType(name)
                elif item.alias is not None:
                    self.alias_decls[name] = item
                if item.doc:
                    self.env.docs[name] = item.doc
        if self.imports is not None:
            self.declare_imported_types()

    def declare_imported_types(self) -> None:
        """The imported types (docs/reference/programs.md "import"), after the file's own: a
        name declared here or brought by another import as another declaration is an
        ``import-conflict``; a type brought only because an imported type refers to it is in
        the program (its contracts) but not a name this file may write (:attr:`hidden`)."""
        self.error_names |= self.imports.failed - set(self.type_decls)
        explicit = {i.name for i in self.imports.declared if i.ident is not None}
        named: dict[int, ast.Ident] = {}  # id(declaration) → where it was imported by name
        for imp in self.imports.declared:
            name, item = imp.name, imp.item
            if isinstance(item, ast.FnDecl):  # a user function: check_user_functions
                if all(i is not item for i in self.imported_items):
                    self.imported_items.append(item)
                    if imp.ident is None:
                        self.hidden_fns.add(name)
                    else:
                        self.hidden_fns.discard(name)
                elif imp.ident is not None:
                    self.hidden_fns.discard(name)
                continue
            if imp.ident is not None:
                if name in BUILTIN_TYPES:
                    self._builtin_import(imp)
                    continue
                if id(item) in named:
                    first_ident = named[id(item)]
                    if first_ident.name == name:
                        message, hint = f"`{name}` is imported twice", "remove this one"
                    else:  # `import { A as B, A as C }`: one declaration, one name per file
                        message = (
                            f"`{item.name.name}` from `{imp.decl.path}` is imported twice, as "
                            f"`{first_ident.name}` and as `{name}`"
                        )
                        hint = (
                            f"a type has one name in a file: remove this one and write "
                            f"`{first_ident.name}` where you meant `{name}`"
                        )
                        self.error_names.add(name)  # its uses: no `unknown-type` besides this
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        message,
                        imp.ident.span,
                        notes=[Note("first imported here", first_ident.span)],
                        hint=hint,
                    )
                    continue
                named[id(item)] = imp.ident
            first = self.type_decls.get(name)
            if first is item:
                if imp.ident is not None:
                    self.hidden.pop(name, None)
                continue
            if first is not None:
                if imp.ident is not None or name not in explicit:  # an explicit one reports
                    self._import_conflict(imp, first)
                continue
            self.type_decls[name] = item
            self.imported_items.append(item)
            self.import_names[id(item)] = name
            if imp.ident is None:
                self.hidden[name] = imp.via or name
            if isinstance(item, ast.ExternType):
                self.env.externs[name] = ExternType(name)
            elif item.alias is not None:
                self.alias_decls[name] = item
            if item.doc:
                self.env.docs[name] = item.doc

    def _builtin_import(self, imp: Any) -> None:
        """``import { Ticket as text }``: an import renamed to a built-in type's name."""
        self.report(
            D.IMPORT_CONFLICT,
            f"`{imp.name}` is a built-in type: an import cannot take its name",
            imp.ident.span,
            hint=f"choose another name: `{imp.item.name.name} as {_other_name(imp.name)}`",
        )
        self.error_names.add(imp.name)

    def _import_conflict(self, imp: Any, first: ast.TypeDecl | ast.ExternType) -> None:
        name, path = imp.name, imp.decl.path
        here = first.span.file == self.module.file
        where = "declared in this file" if here else f"imported from `{first.span.file}`"
        own = imp.item.name.name
        if imp.ident is not None:
            other = _import_name(own, path)
            if own != name:  # `import { Ticket as Case }`
                message = (
                    f"`{own}` is imported from `{path}` as `{name}`, but `{name}` is also {where}"
                )
                hint = f"choose another name after `as`: `{own} as {other}`"
            else:
                message = f"`{name}` is imported from `{path}` but is also {where}"
                hint = (
                    f"rename the import (`{name} as {other}`), or rename or remove the local "
                    "declaration"
                    if here
                    else f"import it from one file only, or rename one import: `{name} as {other}`"
                )
            span = imp.ident.span
        else:
            message = (
                f"`{imp.via}` from `{path}` refers to its type `{name}`, which is also {where}"
            )
            hint = (
                f"import `{name}` too, under another name — `import {{ {imp.via}, {name} as "
                f'{_import_name(name, path)} }} from "{path}"` — or import it from `{path}` '
                "instead of declaring it here (a program has one type of each name)"
            )
            span = next(local.span for _, local in imp.decl.pairs() if local.name == imp.via)
        self.report(
            D.IMPORT_CONFLICT,
            message,
            span,
            notes=[Note(f"the other `{name}`", first.name.span)],
            hint=hint,
        )

    def resolve_aliases(self) -> None:
        """Every ``type N = T``, cycles reported once."""
        for name in list(self.alias_decls):
            self.resolve_alias(name, ())

    def build_object_types(self) -> None:
        """Every ``type N { … }``: its fields, their types and constraints."""
        marks = None
        if self.memo is not None:
            marks = self.memo.replay_object_types(self)
            if marks is None:
                return
        items = self.items if not self.imported_items else self.items + self.imported_items
        names = self.import_names
        for item in items:
            if isinstance(item, ast.TypeDecl) and item.body is not None:
                name = names.get(id(item), item.name.name) if names else item.name.name
                obj = self.object_type(item.body, name, item.doc)
                if self.type_decls.get(name) is item:
                    self.env.objects[name] = obj
        if marks is not None:
            self.memo.record_object_types(self, marks)

    def declare_uses_and_stages(self) -> None:
        """``use`` aliases and stage names share one namespace with ``input``: each name once."""
        value_names: dict[str, ast.Node] = {}

        def claim(ident: Any, reserved: str) -> bool:
            """Take the value name ``ident`` (a use alias or stage name); False, reported, when
            it is taken already or is ``input`` (``reserved``: the message for that)."""
            name = ident.name
            if name in value_names or name == "input":
                first = value_names.get(name)
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"`{name}` is defined twice" if first is not None else reserved,
                    ident.span,
                    notes=[Note("first defined here", first.span)] if first is not None else [],
                )
                return False
            value_names[name] = ident
            return True

        for item in self.items:
            if isinstance(item, ast.UseDecl):
                if claim(item.alias, "`input` is reserved and cannot be an alias"):
                    alias = item.alias.name
                    self.uses[alias] = item
                    self.use_syms[alias] = Symbol("use", alias, UseType(item.kind, alias), item)
            elif isinstance(item, ast.StageDecl):
                if claim(item.name, "a stage cannot be named `input`"):
                    self.all_stages[item.name.name] = item
                    # (`stage parallel`: a later stage's `parallel` starts a `parallel` block)
                    self.reserved_name(item.name.name, item.name.span, "a stage")

    def declare_tools(self) -> None:
        """Each ``extern tool`` once, with its signature; the prelude's tools first."""
        for item in self.items:
            if isinstance(item, ast.ExternTool):
                name = item.name.name
                if name in self.externs:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"tool `{name}` is declared twice",
                        item.name.span,
                        notes=[Note("first declared here", self.externs[name].name.span)],
                    )
                    self.tool_sig(item)
                    continue
                self.externs[name] = item
                self._step_kind_tool_name(item)
        self.tool_decls = dict(self.prelude_sigs)
        for name, item in self.externs.items():
            self.tool_decls[name] = self.tool_sig(item)

    def _step_kind_tool_name(self, item: ast.ExternTool) -> None:
        """``tool-name-is-a-step-kind``: a tool whose catalog name is the kind of a plan's
        control step (`value`, `map`, `sleep` …) — its call would compile to that step, not to a
        tool call (docs/diagnostics.md)."""
        catalog = item.catalog if item.catalog is not None else item.name.name
        if catalog not in CONTROL_STEPS:
            return
        span = item.catalog_span if item.catalog_span is not None else item.name.span
        self.report(
            D.TOOL_NAME_IS_A_STEP_KIND,
            f"a tool cannot be named `{catalog}` in the catalog: `{catalog}` is a step of the "
            "plan, not a tool",
            span,
            hint=f"name it by its catalog name, which has its source's prefix: `extern tool "
            f'"user__{catalog}" as {item.name.name}(…)` for a Python tool, '
            f'`"SERVER__{catalog}"` for an MCP server\'s',
        )

    def check_input(self) -> None:
        """The ``input`` type (``json`` without one), which must have a JSON Schema."""
        inp = self.singles.get(ast.InputDecl)
        if isinstance(inp, ast.InputDecl):
            self.input_type = self.resolve_type(inp.type)
            problem = schema_problem(self.input_type, self.env)
            if problem and not isinstance(self.input_type, ErrorType):
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"the input type has no JSON Schema: {problem}",
                    inp.type.span,
                )
        self.input_sym = Symbol("input", "input", self.input_type, inp)

    def check_settings(self) -> None:
        """The flow's ``deadline`` (a positive duration) and ``budget``, and the declared
        ``output`` type (compared with the last stage by :meth:`check_output`)."""
        dl = self.singles.get(ast.DeadlineDecl)
        if isinstance(dl, ast.DeadlineDecl):
            self.types[id(dl.duration)] = DURATION
            if dl.duration.ms <= 0:
                self.report(
                    D.INVALID_DURATION, "the deadline must be a positive duration", dl.duration.span
                )
            else:
                self.deadline_ms = dl.duration.ms
        budget_decl = self.singles.get(ast.BudgetDecl)
        if isinstance(budget_decl, ast.BudgetDecl):
            self.budget(budget_decl.spec)
        output_decl = self.singles.get(ast.OutputDecl)
        if isinstance(output_decl, ast.OutputDecl):
            self.declared_output = self.resolve_type(output_decl.type)

    def check_stages(self) -> None:
        """Every stage, in order (a stage sees the stages before it)."""
        if self.memo is not None:
            self.memo.check_stages(self)
            return
        for item in self.items:
            if isinstance(item, ast.StageDecl):
                self.check_stage(item)

    def check_output(self) -> None:
        """The flow's output type: the declared ``output``, which the last stage's type must be
        assignable to, else the last stage's type, else ``json``."""
        declared_output: Type | None = self.declared_output
        if declared_output is not None:
            self.output_type = declared_output
            if self.stage_order:
                last = self.stage_order[-1]
                lt = self.stage_types.get(last.name.name, ERROR)
                if not assignable(lt, declared_output, self.env):
                    output_decl = self.singles[ast.OutputDecl]
                    self.report(
                        D.TYPE_MISMATCH,
                        f"the flow's output is `{self.said(declared_output)}` but its last stage "
                        f"`{last.name.name}` gives `{self.said(lt)}`",
                        output_decl.type.span,  # type: ignore[attr-defined]
                        notes=[Note("last stage", last.name.span)],
                    )
        elif self.stage_order:
            self.output_type = self.stage_types.get(self.stage_order[-1].name.name, ERROR)
        else:
            self.output_type = JSON

    def check_test_blocks(self) -> None:
        """The ``test`` blocks (compiler/check_tests.py), against the flow's output type."""
        self.tests = [i for i in self.items if isinstance(i, ast.TestDecl)]
        check_tests(self, self.tests, self.output_type)

    def check_eval_blocks(self) -> None:
        """The ``eval`` blocks (compiler/check_evals.py), against the flow's output type."""
        blocks = [i for i in self.items if isinstance(i, ast.EvalDecl)]
        self.evals = check_evals(self, blocks, self.output_type)

    def check_unused_uses(self) -> None:
        """``unused-alias``: a ``use agent`` / ``use team`` alias no agent call names (a stub
        of it is already ``unknown-stub-target``; another file cannot import it). Not reported
        in a file with a syntax error (the call may be in the item that failed), nor for a
        name that starts with ``_``; an alias named with a word of the language
        (``use agent "w" as verify``) is ``reserved-name`` instead: no call of it parses."""
        if any(isinstance(i, ast.ErrorItem) for i in self.module.items) or any(
            d.code == D.SYNTAX_ERROR for d in self.diags
        ):
            return
        used = {sym.name for sym in self.refs.values() if sym.kind == "use"}
        # an alias an `unknown agent` was told it meant (`agent(wri)`: "did you mean `writer`?")
        used |= {
            d.fix.text
            for d in self.diags
            if d.code == D.UNKNOWN_NAME
            and d.message.startswith("unknown agent")
            and d.fix is not None
        }
        for alias, item in self.uses.items():
            if self.reserved_name(alias, item.alias.span, "an agent alias"):
                continue  # (`use agent "w" as verify`: no `agent(verify)` could ever parse)
            if alias in used or alias.startswith("_"):
                continue
            call = "agent({0}) {{ … }}" if item.kind == "agent" else "agent({0}.main) {{ … }}"
            self.report(
                D.UNUSED_ALIAS,
                f"`{alias}` is never called: no `agent(…)` names this `use {item.kind}` alias",
                item.alias.span,
                hint=f"remove it, or call it: `{call.format(alias)}`",
            )


#: a name to suggest for a type that redefines a built-in one
_OTHER_NAMES = {"Verdict": "Decision", "Error": "Problem", "Outcome": "Result"}


def _import_name(name: str, path: str) -> str:
    """A name for an imported type that clashes: the file's name in front of its own
    (``Ticket`` of ``./billing.flow`` → ``BillingTicket``)."""
    stem = re.sub(r"[^A-Za-z0-9]+", " ", Path(path).stem).title().replace(" ", "")
    if not stem or not stem[0].isalpha() or stem.lower() == name.lower():
        stem = "Imported"
    return stem + name[:1].upper() + name[1:]


def _other_name(name: str) -> str:
    """A name for the user's type that redefined the built-in ``name`` (``Verdict`` → ``Decision``)."""
    return _OTHER_NAMES.get(name, f"My{name[:1].upper()}{name[1:]}")
