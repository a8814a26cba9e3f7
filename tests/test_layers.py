"""Imports flow one way (docs/ARCHITECTURE.md "Layers"):

    core ← grammar ← compiler ← ir ← runtime ← {api, lsp} ← {cli, the agentflow package}

A module may import its own package and any layer to its left, never one to its right.  Every
import of every ``.py`` under ``src/agentflow`` counts, found with :mod:`ast`: module-level ones,
function-local ones, those under ``if TYPE_CHECKING:`` (a type annotation that names an upper
layer is a dependency too: a lower layer takes a Protocol or ``Any`` instead), and the modules
named by the lazy-export tables (``_EXPORTS``) of ``agentflow`` and ``agentflow.ir``.

The bottom layer is ``agentflow.core`` with ``agentflow.errors`` (the public exception tree),
``agentflow._lazy`` (lazy exports) and ``agentflow.stdlib`` (the prelude, data); ``core`` itself
imports nothing of agentflow outside it.  Two edges the order would allow are refused as well:
plans load, validate and run without the compiler, so neither ``ir`` nor ``runtime`` imports
``compiler`` (compiling a `.flow` for the runtime is the api's job).

Inside ``runtime`` the modules have ranks too (:data:`RUNTIME_RANKS`, the table of
docs/ARCHITECTURE.md "Layers"): leaf helpers, then the configuration, the model layer, the
tools, the engine, host features, durable runs.  Across the package no two modules import each
other, however indirectly (:func:`test_no_import_cycles`: function-local imports count, only
``TYPE_CHECKING`` ones do not, as they never run), and no private name is imported from another
package (:func:`test_no_private_names_cross_packages`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import source_tree

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "agentflow"

#: module prefix → (layer, rank); the longest matching prefix wins.  A module may import its own
#: layer and any layer of a lower rank.
LAYERS: dict[str, tuple[str, int]] = {
    "agentflow.core": ("core", 0),
    "agentflow.errors": ("core", 0),
    "agentflow._lazy": ("core", 0),
    "agentflow.stdlib": ("core", 0),
    "agentflow.grammar": ("grammar", 1),
    "agentflow.compiler": ("compiler", 2),
    "agentflow.ir": ("ir", 3),
    "agentflow.runtime": ("runtime", 4),
    "agentflow.api": ("api", 5),
    "agentflow.api_commands": ("api", 5),  # the api functions behind flowc's other commands
    "agentflow.api_check": ("api", 5),  # the api of the front end (no plan models, no runtime)
    "agentflow.api_compile": ("api", 5),  # the api of compiled plans (ir, no runtime)
    "agentflow.api_run": ("api", 5),  # the api of running (the runtime)
    "agentflow.api_config": ("api", 5),  # flowc check's look at flow.toml (the config model)
    "agentflow.api_durable": ("api", 5),  # the api of durable runs seen from outside
    "agentflow.api_evals": ("api", 5),  # the api of evaluations and `test` blocks
    "agentflow.api_serve": ("api", 5),  # the api behind flowc's servers (serve --mcp, ui)
    "agentflow.serve": ("api", 5),  # flowc serve --mcp: runs programs through the api
    "agentflow.serve_wire": ("api", 5),  # serve's wire: JSON-RPC lines and bodies checked
    "agentflow.serve_flows": ("api", 5),  # the programs serve finds, each an MCP tool
    "agentflow.serve_asks": ("api", 5),  # a served run's questions as elicitation requests
    "agentflow.serve_desk": ("api", 5),  # a served durable run's waiting calls and progress
    "agentflow.flowtest": ("api", 5),
    "agentflow.flowtest_network": ("api", 5),  # flowc test's network guard
    "agentflow.flowtest_steps": ("api", 5),  # flowc test's stub step / stub ask
    "agentflow.flowtest_case": ("api", 5),  # flowc test: one test block's run and expects
    "agentflow.flowtest_stubs": ("api", 5),  # flowc test's stubs: router, tools, unused stubs
    "agentflow.flowtest_cache": ("api", 5),  # flowc test's cache of passed tests
    "agentflow.flowtest_report": ("api", 5),  # flowc test's outcomes and report
    "agentflow.ui": ("api", 5),  # flowc ui: the web console over the api's durable functions
    "agentflow.flowexplore": ("api", 5),
    "agentflow.client": ("api", 5),  # what `flowc gen python` modules call: runs through the api
    "agentflow.evals": ("api", 5),  # flowc eval: compiles and runs flows
    "agentflow.lsp": ("lsp", 5),
    "agentflow.cli": ("cli", 6),
    "agentflow.testing": ("testing", 6),
    "agentflow": ("package", 6),
    "agentflow.__main__": ("main", 7),
}
#: (importing layer, imported layer) pairs refused although the ranks allow them
FORBIDDEN: dict[tuple[str, str], str] = {
    ("ir", "compiler"): "plans load and validate without the compiler",
    ("runtime", "compiler"): "the runtime never calls the compiler (the api compiles `.flow`)",
}


@dataclass(frozen=True)
class Import:
    """One import: the importing module and file, its line, the imported module and its text."""

    module: str
    file: Path
    line: int
    target: str
    text: str

    def where(self) -> str:
        return f"{self.file.relative_to(SRC.parent)}:{self.line}: `{self.text}`"


def module_name(file: Path) -> str:
    parts = list(file.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(file: Path) -> list[Import]:
    """Every agentflow import in ``file`` (see the module docstring for what counts)."""
    module = module_name(file)
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    parsed = source_tree.parse(file)  # read and parsed once per process
    out: dict[tuple[int, str], Import] = {}  # one entry per line and imported module

    def add(node: ast.AST, target: str) -> None:
        if target == "agentflow" or target.startswith("agentflow."):
            text = parsed.segment(node) or target
            imp = Import(module, file, node.lineno, target, " ".join(text.split()))
            out.setdefault((node.lineno, target), imp)

    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                # `from agentflow import api` imports the module agentflow.api
                sub = f"{source}.{alias.name}"
                add(node, sub if _is_module(sub) else source)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if "_EXPORTS" in names and isinstance(node.value, ast.Dict):
                for value in node.value.values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        add(value, value.value)
    return list(out.values())


def layer_of(module: str) -> tuple[str, int]:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def violation(imp: Import) -> str | None:
    """Why ``imp`` breaks the layering, or None."""
    if imp.module.startswith("agentflow.core") and not (
        imp.target == "agentflow.core" or imp.target.startswith("agentflow.core.")
    ):
        return "core imports nothing of agentflow outside core"
    (src_layer, src_rank), (dst_layer, dst_rank) = layer_of(imp.module), layer_of(imp.target)
    if src_layer == dst_layer:
        return None
    if dst_rank >= src_rank:
        return f"{src_layer} (layer {src_rank}) imports {dst_layer} (layer {dst_rank})"
    reason = FORBIDDEN.get((src_layer, dst_layer))
    return f"{src_layer} imports {dst_layer}: {reason}" if reason else None


def all_imports() -> list[Import]:
    key = (SRC, PACKAGE)
    if key not in _ALL:  # walked once per process: three tests read it
        _ALL[key] = [imp for file in sorted(PACKAGE.rglob("*.py")) for imp in imports_of(file)]
    return _ALL[key]


_ALL: dict[tuple[Path, Path], list[Import]] = {}


def test_imports_follow_the_layers():
    found = all_imports()
    assert len(found) > 100  # the walk really saw the package
    problems = [f"{imp.where()}: {why}" for imp in found if (why := violation(imp))]
    assert not problems, "imports against the layering:\n" + "\n".join(problems)


def test_every_module_has_a_layer():
    for file in sorted(PACKAGE.rglob("*.py")):
        layer_of(module_name(file))  # raises ValueError (max of nothing) for an unknown package


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        # an upward import inside a function counts
        (
            "def f():\n    from agentflow.compiler.checker import check_module\n",
            "agentflow.grammar.parser",
            "grammar (layer 1) imports compiler (layer 2)",
        ),
        # so does one that only type checkers see
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentflow.api import run\n",
            "agentflow.runtime.executor",
            "runtime (layer 4) imports api (layer 5)",
        ),
        # `from agentflow import X` of a name (not a module) is an import of the package
        ("from agentflow import __version__\n", "agentflow.compiler.render", "compiler (layer 2)"),
        # a lazy export table names the modules it loads
        ('_EXPORTS = {"run": "agentflow.runtime.executor"}\n', "agentflow.ir", "ir (layer 3)"),
        # edges the ranks allow but the architecture refuses
        ("import agentflow.compiler.lowering\n", "agentflow.runtime.planner", "never calls"),
        ("from agentflow.errors import RunError\n", "agentflow.core.spans", "core imports nothing"),
    ],
)
def test_the_layer_check_catches(tmp_path, monkeypatch, source, module, expected):
    """The checker itself: each kind of import it must see, in a throw-away module."""
    file = tmp_path / "agentflow" / Path(*module.split(".")[1:]).with_suffix(".py")
    if module == "agentflow.ir":
        file = tmp_path / "agentflow" / "ir" / "__init__.py"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(source)
    monkeypatch.setattr(f"{__name__}.SRC", tmp_path)
    monkeypatch.setattr(f"{__name__}.PACKAGE", tmp_path / "agentflow")
    for name in ("api", "compiler/checker", "compiler/lowering", "runtime/executor", "errors"):
        stub = tmp_path / "agentflow" / f"{name}.py"
        stub.parent.mkdir(parents=True, exist_ok=True)
        if not stub.exists():
            stub.write_text("")
    problems = [f"{imp.where()}: {why}" for imp in imports_of(file) if (why := violation(imp))]
    assert len(problems) == 1 and expected in problems[0], problems
    assert str(file.relative_to(tmp_path.parent)) in problems[0]  # names file and line


def test_an_import_is_quoted_as_ast_quotes_it(tmp_path):
    """The cached walk quotes each import from its own line table: the same text as
    :func:`ast.get_source_segment`, with non-ASCII text, form feeds and continued lines."""
    file = tmp_path / "m.py"
    file.write_bytes(
        "x = 'é'; import agentflow.core\n\x0c\nfrom agentflow.core import (\n    spans,\n"
        "    vocabulary)\n_EXPORTS = {'é': 'agentflow.ir'}\n".encode()
    )
    parsed = source_tree.parse(file)
    text = file.read_text(encoding="utf-8")
    nodes = [n for n in ast.walk(parsed.tree) if isinstance(n, ast.stmt | ast.Constant)]
    assert len(nodes) > 6
    for node in nodes:
        assert parsed.segment(node) == ast.get_source_segment(text, node), ast.dump(node)


# ---------------------------------------------------------------------------------------------
# Ranks inside runtime (docs/ARCHITECTURE.md "Layers")

#: runtime module prefix (below ``agentflow.runtime.``) → (rank name, rank); the longest matching
#: prefix wins.  A runtime module imports runtime modules of its own rank or a lower one (every
#: import counts, as for the layers).  The configuration, the model layer and the tools sit below
#: the engine that uses them; host features (telemetry, the HTML report) and durable runs sit
#: above it.  ``hooks`` (the host-hook API: AskRequest, the interlocutor) ranks with the tools,
#: which call back into it (an MCP server's elicitation asks through the interlocutor).
RUNTIME_RANKS: dict[str, tuple[str, int]] = {
    # leaf helpers: the expression evaluator and its functions, places in source terms,
    # JSON extraction, events, the interrupt and its watchdog, the shape cache
    "where": ("helpers", 0),
    "watchdog": ("helpers", 0),
    "interrupt": ("helpers", 0),
    "functions": ("helpers", 0),
    "extract": ("helpers", 0),
    "expressions": ("helpers", 0),
    "value_size": ("helpers", 0),
    "events": ("helpers", 0),
    "genai_attributes": ("helpers", 0),
    "shape_cache": ("helpers", 0),
    "run_index": ("helpers", 0),
    "config": ("config", 1),  # flow.toml: loading, the whole Config
    "config_sections": ("config", 1),  # flow.toml's tables as models
    "config_env": ("config", 1),  # flow.toml from the environment; missing key / no model
    "provider_options": ("config", 1),  # [providers.NAME] rules by kind, header ${VAR}s
    "config_errors": ("config", 1),  # flow.toml's errors in its terms: places, messages
    "config_check": ("config", 1),  # flowc check of flow.toml: load errors as diagnostics
    "model_needs": ("config", 1),  # what a plan needs of the models; the shared no-model refusal
    "models": ("models", 2),
    "result": ("models", 2),  # RunResult and usage records (model usage and run results)
    "tools": ("tools", 3),
    "hooks": ("tools", 3),
    "context": ("engine", 4),
    "effects": ("engine", 4),
    "executor": ("engine", 4),
    "dispatch": ("engine", 4),
    "control": ("engine", 4),
    "agent": ("engine", 4),
    "agent_step": ("engine", 4),
    "planner": ("engine", 4),
    "chat": ("engine", 4),
    "telemetry": ("host", 5),  # OpenTelemetry sinks: their event handlers
    "telemetry_spans": ("host", 5),  # the sinks' span tree (OtelSink's base)
    "telemetry_settings": ("host", 5),  # what is exported and where, trace identity
    "report": ("host", 5),  # the HTML run report
    "durable": ("durable", 6),
    "": ("package", 7),  # agentflow.runtime itself: its re-exports
}


def runtime_rank_of(module: str) -> tuple[str, int]:
    """The rank of runtime module ``module`` (a full dotted name)."""
    rest = module.removeprefix("agentflow.runtime").removeprefix(".")
    best = max(
        (p for p in RUNTIME_RANKS if p == "" or rest == p or rest.startswith(p + ".")), key=len
    )
    return RUNTIME_RANKS[best]


def _in_runtime(module: str) -> bool:
    return module == "agentflow.runtime" or module.startswith("agentflow.runtime.")


def rank_violation(imp: Import) -> str | None:
    """Why ``imp`` (an import between two runtime modules) breaks the ranks, or None."""
    if not (_in_runtime(imp.module) and _in_runtime(imp.target)):
        return None
    (src, src_rank), (dst, dst_rank) = runtime_rank_of(imp.module), runtime_rank_of(imp.target)
    if dst_rank > src_rank:
        return f"runtime {src} (rank {src_rank}) imports runtime {dst} (rank {dst_rank})"
    return None


def test_runtime_imports_follow_the_ranks():
    found = [imp for imp in all_imports() if _in_runtime(imp.module) and _in_runtime(imp.target)]
    assert len(found) > 100
    problems = [f"{imp.where()}: {why}" for imp in found if (why := rank_violation(imp))]
    assert not problems, "imports against the runtime's ranks:\n" + "\n".join(problems)


def test_every_runtime_module_has_a_named_rank():
    """A new runtime module gets a line in RUNTIME_RANKS (only the package itself takes ``""``)."""
    unranked = [
        name
        for file in sorted((PACKAGE / "runtime").rglob("*.py"))
        if (name := module_name(file)) != "agentflow.runtime"
        and runtime_rank_of(name)[0] == "package"
    ]
    assert not unranked, f"add these to RUNTIME_RANKS: {unranked}"


def test_the_rank_check_catches_an_upward_import_inside_runtime(tmp_path, monkeypatch):
    """A tool that imports the executor, even inside a function, is refused."""
    file = tmp_path / "agentflow" / "runtime" / "tools" / "x.py"
    file.parent.mkdir(parents=True)
    file.write_text("def f():\n    from agentflow.runtime.executor import Executor\n")
    (tmp_path / "agentflow" / "runtime" / "executor.py").write_text("")
    monkeypatch.setattr(f"{__name__}.SRC", tmp_path)
    problems = [why for imp in imports_of(file) if (why := rank_violation(imp))]
    assert problems == ["runtime tools (rank 3) imports runtime engine (rank 4)"]


# ---------------------------------------------------------------------------------------------
# No import cycles


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Lines of the ``if TYPE_CHECKING:`` blocks of a module (imports that never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def import_graph() -> dict[str, set[str]]:
    """module → the agentflow modules it imports when it runs: module-level and function-local
    imports and the lazy-export tables, not ``TYPE_CHECKING`` ones."""
    graph: dict[str, set[str]] = {module_name(f): set() for f in PACKAGE.rglob("*.py")}
    skip = {f: _type_checking_lines(source_tree.parse(f).tree) for f in PACKAGE.rglob("*.py")}
    for imp in all_imports():
        if imp.line not in skip[imp.file] and imp.target != imp.module:
            graph[imp.module].add(imp.target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` with more than one module (each
    sorted; iterative, so a deep chain of imports cannot exhaust the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 100 and sum(map(len, graph.values())) > 500  # the walk saw the package
    cycles = strongly_connected(graph)
    unexpected = cycles
    assert not unexpected, "modules that import each other (directly or through others):\n" + (
        "\n".join(" <-> ".join(c) for c in unexpected)
    )


def test_the_cycle_check_finds_a_cycle_through_a_function_local_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


# ---------------------------------------------------------------------------------------------
# No private names across packages


def _package_of(module: str) -> str:
    path = SRC.joinpath(*module.split("."))
    return module if (path / "__init__.py").is_file() else module.rpartition(".")[0]


def private_imports() -> list[tuple[str, str, str, int]]:
    """(importing module, imported module, private name, line) of every ``from M import _x``
    (not a module, not a dunder) and every ``m._x`` of a module ``m`` imported by name, where
    M is an agentflow module of another package than the importer's."""
    out = []
    for file in sorted(PACKAGE.rglob("*.py")):
        module = module_name(file)
        package = _package_of(module)
        tree = source_tree.parse(file).tree
        aliases: dict[str, str] = {}  # local name → agentflow module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if not source.startswith("agentflow"):
                    continue
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    if _is_module(sub):
                        aliases[alias.asname or alias.name] = sub
                    elif alias.name.startswith("_") and not alias.name.startswith("__"):
                        out.append((module, source, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("agentflow.") and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                out.append((module, aliases[node.value.id], node.attr, node.lineno))
    return [r for r in out if _package_of(r[1]) != _package_of(r[0])]


def test_no_private_names_cross_packages():
    found = private_imports()
    unexpected = sorted(set(found))
    assert not unexpected, "private names imported from another package:\n" + "\n".join(
        f"{m}:{line} uses {source}.{name}" for m, source, name, line in unexpected
    )


# ---------------------------------------------------------------------------------------------
# Imports at module level

#: The function-local imports of agentflow modules left in src/agentflow, each with its reason
#: (issue 34: imports at module level, except at the CLI command boundary and for what loads an
#: optional or slow third-party package).  (importing module, imported module).
LOCAL_IMPORTS: dict[tuple[str, str], str] = {
    ("agentflow.cli", "agentflow.lsp.server"): "the command boundary: `flowc lsp` only",
    ("agentflow.compiler.api", "agentflow.grammar.parser"): "lark (~70 ms) off start-up",
    ("agentflow.compiler.api", "agentflow.compiler.division_comments"): "it imports the parser",
    ("agentflow.compiler.check_depth", "agentflow.grammar.parser"): "lark off start-up",
    ("agentflow.compiler.imports", "agentflow.grammar.parser"): "lark off start-up",
    ("agentflow.compiler.check_functions", "agentflow.grammar.parser"): "lark off start-up",
    ("agentflow.compiler.checker", "agentflow.grammar.parser"): "lark off start-up",
    ("agentflow.compiler.fmt", "agentflow.grammar.parser"): "lark off start-up",
    ("agentflow.runtime.expressions", "agentflow.grammar.parser"): "lark: raw conditions only",
    ("agentflow.runtime.durable.temporal_runs", "agentflow.runtime.durable.temporal_workflows"): (
        "temporalio, an optional package"
    ),
    ("agentflow.runtime.models.router", "agentflow.runtime.models.anthropic"): (
        "inside try/except ImportError"
    ),
    # `flowc answer` / `cancel` read no plan and parse nothing (tests/cli/test_startup_imports.py)
    ("agentflow.runtime.durable.run_info", "agentflow.ir.loader"): "lark off answer/cancel",
    ("agentflow.runtime.durable.records", "agentflow.ir.loader"): "lark off answer/cancel",
    ("agentflow.runtime.where", "agentflow.grammar"): "the .flow AST off answer/cancel",
    ("agentflow.runtime.where", "agentflow.grammar.parser"): "lark off answer/cancel",
    ("agentflow.runtime.where", "agentflow.runtime.expressions"): "lark off answer/cancel",
    ("agentflow.runtime.hooks", "agentflow.runtime.expressions"): "lark off answer/cancel",
}


def _module_name(file: Path) -> str:
    parts = list(file.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_agentflow_imports_sit_at_module_level():
    """Every function-local import of an agentflow module is one of LOCAL_IMPORTS (with its
    reason); a new one fails here (move it to module level, or say why it cannot be)."""
    found: set[tuple[str, str]] = set()
    for file in sorted((SRC / "agentflow").rglob("*.py")):
        tree = source_tree.parse(file).tree  # parsed once per process, shared with the others
        # every node inside a function, each visited once (a nested function's body is not
        # walked again for each function around it)
        inside = [
            child
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            for child in fn.body
        ]
        while inside:
            node = inside.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue  # ast.walk(tree) gave it too: its body is walked from there
            inside.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentflow"):
                found.add((_module_name(file), str(node.module)))
            elif isinstance(node, ast.Import):
                found.update(
                    (_module_name(file), a.name)
                    for a in node.names
                    if a.name.startswith("agentflow")
                )
    assert sorted(found - set(LOCAL_IMPORTS)) == [], "move these imports to module level"
    assert sorted(set(LOCAL_IMPORTS) - found) == [], "no longer local: drop from LOCAL_IMPORTS"
