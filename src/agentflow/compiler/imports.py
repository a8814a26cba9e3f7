"""`import { Ticket, Severity } from "./shared.flow"`: the types of other `.flow` files
(docs/reference/programs.md "import", docs/decisions.md "Imports").

:class:`Importer` resolves the ``import`` items of a parsed module before it is checked: each
path (relative to the importing file, ``./`` or ``../`` first, ending in ``.flow``) is read,
parsed and checked on its own — once per check, however many files import it — and each name
must be a type (``type``, ``extern type``) the file declares itself. What the module gets is an
:class:`Imports`: the declarations to check with its own (each imported type, and the types it
refers to, transitively, under their own names: the plan's contracts name every type once), and
the diagnostics of the imports themselves (`invalid-import-path`, `import-not-found`,
`unknown-import`, `import-cycle`, `import-error`). The checker reports a name clash
(`import-conflict`) and leaves the imported declarations' own diagnostics to their file.

Nothing of another file is needed once the program is checked: imported types are compiled into
the plan like the file's own (a plan never refers to another file).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentflow.compiler.check_memo import StageMemo
from agentflow.compiler.checker import CheckResult, check_module
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Diagnostic, Note, closest
from agentflow.grammar import ast

__all__ = [
    "Imported",
    "Imports",
    "Importer",
    "TypeItem",
    "check_parsed",
    "file_key",
    "has_imports",
    "importers_of",
    "read_source",
]

#: a declaration an import can bring: ``type N { … }``, ``type N = T``, ``extern type N`` (and
#: ``fn``: :data:`Item`)
TypeItem = ast.TypeDecl | ast.ExternType
#: anything an import can bring: a type, or a user function (docs/reference/programs.md "User
#: functions")
Item = ast.TypeDecl | ast.ExternType | ast.FnDecl

#: a URL scheme (`https:`, `file:`), which an import path may not start with
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(slots=True)
class Imported:
    """One declaration brought into a module under the name ``name`` (this module's name for
    it: the ``as`` name of a renamed import, else the declaration's own): ``item`` (its span
    names its own file), by the import ``decl``; ``ident`` is the name this file wrote for a
    name imported explicitly (the ``as`` name when renamed), None for a type an imported one
    refers to (``via`` names that one, as this file knows it)."""

    name: str
    item: Item
    decl: ast.ImportDecl
    ident: ast.Ident | None
    via: str | None = None


@dataclass(slots=True)
class Imports:
    """What :meth:`Importer.resolve` found for one module: the declarations to check with it
    (explicit imports first, in the order written), the diagnostics of its ``import`` items, and
    every file read for it (display names as in spans; the language server re-checks the module
    when one of them changes)."""

    declared: list[Imported] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    #: display name → resolved path of every file read (transitively)
    paths: dict[str, Path] = field(default_factory=dict)
    #: display name → text of every file read (for rendering notes in them)
    sources: dict[str, str] = field(default_factory=dict)
    #: the names that could not be imported (reported once, at the import: their uses are
    #: not reported again)
    failed: set[str] = field(default_factory=set)
    #: the files of the import cycles this file is part of
    cycle: set[Path] = field(default_factory=set)
    #: display name → the type names in scope in that file (its ``type_decls``), for every
    #: file read (transitively): a type's body is read in its own file's scope
    scopes: dict[str, dict[str, TypeItem]] = field(default_factory=dict)
    #: display name → the user functions in scope in that file (its own and imported ones),
    #: for every file read (transitively): a call in a body is read in its own file's scope
    fn_scopes: dict[str, dict[str, ast.FnDecl]] = field(default_factory=dict)
    #: ``id(NamedType)`` → this module's name for the type, for each type written in an
    #: imported declaration (a type's body, a function's signature) under another name than
    #: this module knows it by (a renamed import: ``import { Severity as Level }`` makes
    #: ``Ticket``'s ``Severity`` a ``Level``, and ``rank(s: Severity)`` takes a ``Level``)
    refs: dict[int, str] = field(default_factory=dict)


#: an ``import { … } from "PATH"`` item, found without parsing (:func:`importers_of`)
_IMPORT_LINE = re.compile(r'^[ \t]*import[ \t]*\{[^}]*\}[ \t\n]*from[ \t]+"([^"\n]*)"', re.M)
#: the most files :func:`importers_of` reads
_IMPORTERS_MAX_FILES = 500


def importers_of(path: str | os.PathLike[str]) -> list[Path]:
    """The `.flow` files near ``path`` that import it directly: those of its directory, of the
    directory above, and of their sub-directories (one level down) — where a project keeps the
    flows that share a file of types — in sorted order, at most
    :data:`_IMPORTERS_MAX_FILES` files read (for the message of ``flowc run`` of a library)."""
    target = file_key(path)
    here = target.parent
    seen: set[Path] = set()
    found: list[Path] = []
    read = 0
    for root in (here, here.parent):
        try:
            dirs = [root, *sorted(d for d in root.iterdir() if d.is_dir())]
        except OSError:
            continue
        for d in dirs:
            try:
                files = sorted(d.glob("*.flow"))
            except OSError:
                continue
            for f in files:
                key = file_key(f)
                if key == target or key in seen:
                    continue
                seen.add(key)
                read += 1
                if read > _IMPORTERS_MAX_FILES:
                    return found
                try:
                    text = read_source(f)
                except OSError:
                    continue
                if any(file_key(f.parent / w) == target for w in _IMPORT_LINE.findall(text)):
                    found.append(f)
    return found


def has_imports(module: ast.Module) -> bool:
    """True when the module has an ``import`` item (a file without one costs nothing more)."""
    return any(type(i) is ast.ImportDecl for i in module.items)


def read_source(path: str | os.PathLike[str]) -> str:
    """Read a source file as text: UTF-8, NUL bytes kept, a leading byte-order mark dropped (so
    columns on the first line count from the first real character; a later ``flowc fmt`` writes
    the file without it). A byte that is not UTF-8 is kept as the lone surrogate U+DC80…U+DCFF
    (``errors="surrogateescape"``), which the parser reports as a `syntax-error` at its position
    (it is never silently a U+FFFD in the program or its plan).

    Only a regular file (a link to one included) of at most :data:`MAX_SOURCE_BYTES` is read:
    a FIFO, a device (``/dev/zero``), a socket or a larger file would block or exhaust memory
    (it is opened without blocking and looked at before a byte is read).

    Raises ``OSError`` when the file cannot be read (missing, a directory, no permission, not
    a regular file, too large).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise OSError(errno.EINVAL, f"{what} (a program is a `.flow` file)", str(path))
        if info.st_size > MAX_SOURCE_BYTES:
            raise OSError(
                errno.EFBIG,
                f"{info.st_size:,} bytes, more than a program may have "
                f"({MAX_SOURCE_BYTES // (1024 * 1024)} MiB)",
                str(path),
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:  # it grew while read
        raise OSError(errno.EFBIG, "more than a program may have", str(path))
    return data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")


#: The largest source file read (bytes): far above any program (a 10,000-line program is under
#: 1 MiB), far below what would exhaust memory.
MAX_SOURCE_BYTES = 16 * 1024 * 1024
#: How deep imports may nest (a file importing one that imports one …): far above any
#: project's layering, below Python's recursion limit for the checks it nests.
MAX_IMPORT_DEPTH = 64


def check_parsed(
    module: ast.Module,
    parse_diagnostics: list[Diagnostic],
    importer: Importer | None = None,
    memo: StageMemo | None = None,
) -> CheckResult:
    """Check a parsed module, its ``import`` items resolved first (by ``importer``, a new
    :class:`Importer` reading files from disk when None; a module without imports reads
    nothing): docs/reference/programs.md "import"."""
    imports = None
    if has_imports(module):
        imports = (importer or Importer()).resolve(module)
    return check_module(module, parse_diagnostics=parse_diagnostics, memo=memo, imports=imports)


class Importer:
    """Resolves imports for one check (a tree of files): each file is read and checked once,
    the files being checked are a stack (an import of one of them is a cycle).

    ``read(path) -> text`` reads a file (the language server passes the text of open
    documents); ``OSError`` when it cannot. ``cache`` may be shared between checks (the
    language server shares one between its documents; :meth:`forget` drops a changed file).
    Files are known by :func:`file_key`."""

    def __init__(
        self,
        read: Callable[[Path], str] = read_source,
        cache: dict[Path, tuple[str, CheckResult | OSError, str]] | None = None,
    ) -> None:
        self.read = read
        #: resolved path → (display name, its check or why it could not be read, its text)
        self.cache: dict[Path, tuple[str, CheckResult | OSError, str]] = (
            {} if cache is None else cache
        )
        self.stack: list[Path] = []
        #: the entries this check used, by path
        self.local: dict[Path, tuple[str, CheckResult | OSError, str]] = {}

    def forget(self, path: Path) -> None:
        """Drop the cached check of ``path`` (a changed file) and of every file that read it."""
        for key, (_display, checked, _text) in list(self.cache.items()):
            if key == path or (
                not isinstance(checked, OSError)
                and checked.imports is not None
                and path in checked.imports.paths.values()
            ):
                self.cache.pop(key, None)

    def resolve(self, module: ast.Module) -> Imports:
        """The :class:`Imports` of ``module`` (its ``import`` items, in order)."""
        out = Imports()
        me = file_key(module.file)
        base = Path(module.file).parent
        self.stack.append(me)
        try:
            for item in module.items:
                if type(item) is ast.ImportDecl:
                    self._one(item, base, out)
        finally:
            self.stack.pop()
        _local_names(out)
        return out

    def _one(self, decl: ast.ImportDecl, base: Path, out: Imports) -> None:
        out.failed.update(local.name for _, local in decl.pairs())  # until each is found
        written = decl.path
        problem = _path_problem(written, base)
        if problem is not None:
            message, hint = problem
            out.diagnostics.append(
                Diagnostic(D.INVALID_IMPORT_PATH, message, decl.path_span, hint=hint)
            )
            return
        display = os.path.normpath(base / written)
        target = file_key(display)
        if target in self.stack:
            chain = self.stack[self.stack.index(target) :] + [target]
            out.cycle.update(chain)
            shown = " → ".join(_shown(p, base) for p in chain)
            out.diagnostics.append(
                Diagnostic(
                    D.IMPORT_CYCLE,
                    f"import cycle: {shown}" if len(chain) > 2 else "a file cannot import itself",
                    decl.path_span,
                    hint="move the types both files need into a third file that imports "
                    "neither, and import them from there"
                    if len(chain) > 2
                    else "this file imports itself: remove the import (a file's own types need "
                    "none)",
                )
            )
            return
        if len(self.stack) >= MAX_IMPORT_DEPTH and target not in self.local:
            out.diagnostics.append(
                Diagnostic(
                    D.IMPORT_ERROR,
                    f"`{written}` is more than {MAX_IMPORT_DEPTH} imports deep (a file that "
                    "imports a file that imports …)",
                    decl.path_span,
                    hint="import the types from the file that declares them, nearer the "
                    "top of the chain",
                )
            )
            return
        out.paths[display] = target  # a file that could not be read too: it may appear
        _display, checked, text = self._load(target, display)
        if isinstance(checked, OSError):
            out.diagnostics.append(_not_found(decl, target, checked, self.stack[-1]))
            return
        out.files.add(checked.module.file)
        out.sources[checked.module.file] = text
        deps = checked.imports
        out.scopes[checked.module.file] = checked.type_decls
        out.fn_scopes[checked.module.file] = {n: s.decl for n, s in checked.functions.items()}
        if deps is not None:
            out.files |= deps.files
            out.paths.update(deps.paths)
            out.sources.update(deps.sources)
            out.scopes.update(deps.scopes)
            out.fn_scopes.update(deps.fn_scopes)
        scope = _scope(checked)
        errors = checked.errors
        cycle = next((d for d in errors if d.code == D.IMPORT_CYCLE), None)
        in_cycle = cycle is not None and deps is not None and self.stack[-1] in deps.cycle
        for ident, local in decl.pairs():
            fn = _function(checked, ident.name)
            if fn is not None and ident.name not in scope:
                if local is not ident and local.name != ident.name:
                    out.diagnostics.append(
                        Diagnostic(
                            D.UNSUPPORTED_CONSTRUCT,
                            f"function `{ident.name}` cannot be renamed on import",
                            local.span,
                            hint=f"import it as `{ident.name}` (the functions it calls know "
                            "it by that name)",
                        )
                    )
                    continue
                if errors and not in_cycle:
                    continue  # accepted everywhere, as a type of a file with errors is
                out.failed.discard(local.name)
                out.declared.append(Imported(local.name, fn, decl, local))
                for dep in _function_dependencies(fn, out.scopes, out.fn_scopes):
                    out.declared.append(Imported(dep.name.name, dep, decl, None, local.name))
                continue
            item = scope.get(ident.name)
            if item is None or item.span.file != checked.module.file:
                out.diagnostics.append(_unknown(decl, ident, checked, item))
                continue
            if errors and not in_cycle:
                # the file has errors (one `import-error`): what it declares may be wrong (a
                # local type that failed falls back to a built-in one), so the name is accepted
                # everywhere in this file, not checked against it (docs/diagnostics.md)
                continue
            out.failed.discard(local.name)
            out.declared.append(Imported(local.name, item, decl, local))
            for dep in _dependencies(item, out.scopes):
                out.declared.append(Imported(dep.name.name, dep, decl, None, local.name))
        if in_cycle:
            assert cycle is not None and deps is not None
            # the file imports this one back, maybe through others
            out.cycle |= deps.cycle
            shown = cycle.message.split("import cycle: ", 1)[-1]
            out.diagnostics.append(
                Diagnostic(
                    D.IMPORT_CYCLE,
                    f"`{written}` is part of an import cycle: {shown}",
                    decl.path_span,
                    notes=[Note("the import that closes the cycle", cycle.span)],
                    hint=cycle.hint,
                )
            )
        elif errors:
            first = errors[0]
            n = len(errors)
            out.diagnostics.append(
                Diagnostic(
                    D.IMPORT_ERROR,
                    f"`{written}` has {n} error{'s' if n != 1 else ''}",
                    decl.path_span,
                    notes=[Note(f"error[{first.code}]: {first.message}", first.span)],
                    hint=f"fix the errors of that file (`flowc check {checked.module.file}`)",
                )
            )

    def _load(self, target: Path, display: str) -> tuple[str, CheckResult | OSError, str]:
        """``(display name, the file's check or why it could not be read, its text)``: one
        entry per file for the whole check (``local``), even when another thread replaces
        the shared cache's entry meanwhile (a type reached twice is one declaration)."""
        entry = self.local.get(target) or self.cache.get(target)
        if entry is None:
            try:
                text = self.read(target)
            except OSError as e:
                entry = (display, e, "")
            else:
                # the parser (lark and its tables, ~70 ms) loads on first use, not at start-up
                from agentflow.grammar.parser import parse_module

                module, parse_diags = parse_module(text, display)
                entry = (display, check_parsed(module, parse_diags, self), text)
            self.cache[target] = entry
        self.local[target] = entry
        return entry


def file_key(file: str | os.PathLike[str]) -> Path:
    """The path a file is known by (absolute, links resolved: one file reached by two routes
    is one file, and a cycle through a link is a cycle). A path that cannot be resolved (a
    symlink loop, a name too long for the file system: ``RuntimeError``/``OSError`` from
    :meth:`Path.resolve`) is known by its absolute, normalised spelling; reading it then
    fails with the ``OSError`` its diagnostic names."""
    try:
        return Path(file).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(file))


def _is(path: Path, kind: Callable[[Path], bool]) -> bool:
    """``kind(path)`` (``Path.is_file``, ``Path.is_dir``, ``Path.exists``), False when the
    file system cannot say (``ENAMETOOLONG``, ``EACCES``, a symlink loop)."""
    try:
        return kind(path)
    except (OSError, RuntimeError, ValueError):
        return False


def _shown(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, file_key(str(base)))
    except ValueError:  # pragma: no cover - another drive (Windows)
        return str(path)


def _path_problem(written: str, base: Path | None = None) -> tuple[str, str] | None:
    """Why ``written`` is not an import path (message, hint), or None."""
    example = '`import { T } from "./shared.flow"`'
    if "://" in written or (_SCHEME.match(written) and not written.startswith(".")):
        return (
            f"an import is a file of this project, not a URL: `{written}`",
            f"copy the file beside this one and import it by its relative path: {example}",
        )
    if os.path.isabs(written) or written.startswith(("/", "\\", "~")):
        return (
            f"an import path is relative to the importing file: `{written}`",
            f"start it with `./` or `../`: {example}",
        )
    if not written.startswith(("./", "../")):
        # hint only a path that exists: this directory's, else a parent's (`types/x.flow`
        # written in flows/ for ../types/x.flow)
        found = next(
            (
                c
                for c in ("./", "../", "../../")
                if base is not None and _importable(base / c / written)
            ),
            None,
        )
        return (
            f"an import path starts with `./` or `../`: `{written}`",
            f'write `"{found}{written}"`'
            if found is not None
            else f"say where it is from this file's directory: `./{written}` (beside this "
            "file) or `../…` (a directory above)",
        )
    if not written.endswith(".flow"):
        return (
            f"an import names a `.flow` file: `{written}`",
            f"write the file's whole name: {example}",
        )
    return None


def _importable(path: Path) -> bool:
    """Whether ``path`` is a file an import could read: a regular file (a link to one
    included) of at most :data:`MAX_SOURCE_BYTES` that this process may read (the hint of
    `import-not-found` suggests nothing else)."""
    try:
        info = path.stat()
    except (OSError, RuntimeError, ValueError):
        return False
    return (
        stat.S_ISREG(info.st_mode) and info.st_size <= MAX_SOURCE_BYTES and os.access(path, os.R_OK)
    )


def _not_found(decl: ast.ImportDecl, target: Path, err: OSError, importer: Path) -> Diagnostic:
    why = "no such file"
    if _is(target, Path.is_dir):
        why = "it is a directory"
    elif err.errno not in (errno.ENOENT, None) or _is(target, Path.exists):
        why = err.strerror or str(err)  # too long a name, a symlink loop, no permission
    hint = None
    try:
        # never the importing file itself, nor a file an import could not read either
        near = [
            p.name
            for p in target.parent.glob("*.flow")
            if p.name != target.name and file_key(p) != importer and _importable(p)
        ]
    except OSError:
        near = []
    found = closest(target.name, near)
    fix = None
    if found:
        written = decl.path[: len(decl.path) - len(target.name)] + found
        hint = f'did you mean `"{written}"`?'
        fix = D.respelling(decl.path_span, decl.path, written, before='"', after='"')
    return Diagnostic(
        D.IMPORT_NOT_FOUND,
        f"cannot import `{decl.path}`: {why}",
        decl.path_span,
        hint=hint or "the path is relative to the importing file's directory",
        fix=fix,
    )


def _scope(checked: CheckResult) -> dict[str, TypeItem]:
    """Every type declaration in scope in a checked file: its own and what it imported."""
    return checked.type_decls


def _unknown(
    decl: ast.ImportDecl, ident: ast.Ident, checked: CheckResult, item: TypeItem | None
) -> Diagnostic:
    name = ident.name
    file = decl.path
    if item is not None:  # imported there from a third file
        # a renaming is that file's own: asked for by its name there, the type is imported
        # from its file under its own name and renamed here (docs/reference/programs.md
        # "Renaming an import")
        declared_as = item.name.name
        source = _relative(item.span.file, decl.span.file)
        there = f" (where it is `{declared_as}`)" if declared_as != name else ""
        written = f"{declared_as} as {name}" if declared_as != name else name
        return Diagnostic(
            D.UNKNOWN_IMPORT,
            f"`{name}` is not declared in `{file}`, which imports it from `{source}`" + there,
            ident.span,
            notes=[Note("declared here", item.name.span)],
            hint="import it from the file that declares it: "
            f'`import {{ {written} }} from "{source}"`',
        )
    renamed = next(
        (
            (local, i)
            for local, i in checked.type_decls.items()
            if i.name.name == name and local != name and i.span.file != checked.module.file
        ),
        None,
    )
    if renamed is not None:  # imported there under another name: `import { T as U }`
        local, i = renamed
        source = _relative(i.span.file, decl.span.file)
        return Diagnostic(
            D.UNKNOWN_IMPORT,
            f"`{name}` is not declared in `{file}`, which imports it from `{source}` as "
            f"`{local}`: a file offers only what it declares, and a renaming is its own",
            ident.span,
            notes=[Note("declared here", i.name.span)],
            hint=f'import it from the file that declares it: `import {{ {name} }} from "{source}"`',
        )
    for stage in checked.stages:
        if stage.name.name == name:
            return Diagnostic(
                D.UNKNOWN_IMPORT,
                f"`{name}` is a stage of `{file}`: only types can be imported",
                ident.span,
                notes=[Note("the stage", stage.name.span)],
                hint="import the types it works with, or call that flow as the tool "
                f"`plan__{checked.flow_name}`",
            )
    sig = checked.functions.get(name)
    if sig is not None:  # a function imported there from a third file
        fn = sig.decl
        there = _relative(fn.span.file, decl.span.file)
        return Diagnostic(
            D.UNKNOWN_IMPORT,
            f"`{name}` is a function that `{file}` imports from `{there}`: a file offers only "
            "what it declares",
            ident.span,
            notes=[Note("declared here", fn.name.span)],
            hint=f'import it from the file that declares it: `import {{ {name} }} from "{there}"`',
        )
    own = [n for n, i in checked.type_decls.items() if i.span.file == checked.module.file]
    fns = [n for n, s in checked.functions.items() if s.decl.span.file == checked.module.file]
    what = "type or function" if fns else "type"
    own += fns
    meant = closest(name, own)
    return Diagnostic(
        D.UNKNOWN_IMPORT,
        f"`{file}` declares no {what} `{name}`",
        ident.span,
        hint=D.meant_hint(meant)
        if meant
        else (f"it declares {_listing(own)}" if own else "it declares no type or function"),
        fix=D.respelling(ident.span, name, meant),
    )


def _relative(file: str, importer: str) -> str:
    """``file`` as an import path from the file ``importer`` (``./lib.flow``, ``../x.flow``)."""
    shown = os.path.relpath(file, os.path.dirname(importer) or ".")
    return shown if shown.startswith(".") else "./" + shown


def _function(checked: CheckResult, name: str) -> ast.FnDecl | None:
    """The user function ``name`` a checked file declares itself, or None."""
    sig = checked.functions.get(name)
    if sig is None or sig.decl.span.file != checked.module.file:
        return None
    decl: ast.FnDecl = sig.decl
    return decl


def _function_dependencies(
    fn: ast.FnDecl,
    scopes: dict[str, dict[str, TypeItem]],
    fn_scopes: dict[str, dict[str, ast.FnDecl]],
) -> Iterator[Item]:
    """What an imported function needs, transitively: the functions it calls (its file's own
    and those its file imported, and theirs, across files) and the types their signatures name
    (with the types those refer to), ``fn`` itself left out. Each name is looked up in the
    scope of the file that wrote it (``scopes``, ``fn_scopes``, by display name)."""
    seen: set[int] = {id(fn)}
    todo = [fn]
    while todo:
        cur = todo.pop()
        scope = scopes.get(cur.span.file, {})
        functions = fn_scopes.get(cur.span.file, {})
        for p in [*(q.type for q in cur.params), cur.returns]:
            for node in ast.walk(p):
                if isinstance(node, ast.NamedType):
                    dep = scope.get(node.name)
                    if dep is not None and id(dep) not in seen:
                        seen.add(id(dep))
                        yield dep
                        for more in _dependencies(dep, scopes):
                            if id(more) not in seen:
                                seen.add(id(more))
                                yield more
        for node in ast.walk(cur.body):
            if isinstance(node, ast.UserCall):
                callee = functions.get(node.name)
                if callee is not None and id(callee) not in seen:
                    seen.add(id(callee))
                    todo.append(callee)
                    yield callee


def _listing(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in sorted(names)[:6])
    return shown + (", …" if len(names) > 6 else "")


def _dependencies(item: TypeItem, scopes: dict[str, dict[str, TypeItem]]) -> Iterator[TypeItem]:
    """The declarations ``item`` refers to, transitively (each name looked up in the scope of
    the file that wrote it: ``scopes``, by display name), itself left out."""
    seen = {id(item)}
    todo = [item]
    while todo:
        cur = todo.pop()
        if not isinstance(cur, ast.TypeDecl):
            continue
        scope = scopes.get(cur.span.file, {})
        for node in ast.walk(cur.body if cur.body is not None else cur.alias):
            if isinstance(node, ast.NamedType):
                dep = scope.get(node.name)
                if dep is not None and id(dep) not in seen:
                    seen.add(id(dep))
                    todo.append(dep)
                    yield dep


def _local_names(out: Imports) -> None:
    """Name every declaration ``out`` brings as this module knows it (docs/reference/
    programs.md "Renaming an import"): an explicitly imported one by the name written here
    (its ``as`` name when renamed), one brought only by another under its own name; and
    fill :attr:`Imports.refs` for the types written in imported declarations under another
    name (the other file's ``as`` name, or a name this module renamed)."""
    local: dict[int, str] = {}
    for imp in out.declared:
        if imp.ident is not None:
            local.setdefault(id(imp.item), imp.name)
    for imp in out.declared:
        if imp.ident is None:
            imp.name = local.setdefault(id(imp.item), imp.item.name.name)
    seen: set[int] = set()
    for imp in out.declared:
        item = imp.item
        if id(item) in seen or isinstance(item, ast.ExternType):
            continue
        seen.add(id(item))
        scope = out.scopes.get(item.span.file, {})
        # a function's signature names types too (its body is walked for the types an
        # expression may write): each read in the function's own file
        written: list[ast.Node | None] = (
            [*(p.type for p in item.params), item.returns, item.body]
            if isinstance(item, ast.FnDecl)
            else [item.body if item.body is not None else item.alias]
        )
        for node in (n for w in written if w is not None for n in ast.walk(w)):
            if isinstance(node, ast.NamedType):
                dep = scope.get(node.name)
                if dep is not None:
                    name = local.get(id(dep), node.name)
                    if name != node.name:
                        out.refs[id(node)] = name
