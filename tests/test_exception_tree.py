"""Every exception a caller of agentflow may see is defined in ``agentflow/errors.py``, under
``FlowError`` (``Interrupted`` alone is a ``KeyboardInterrupt``, on purpose).

An exception class defined anywhere else in ``src/agentflow`` is private (``_Name``) or one of
the few that never leave the package, listed below with the place that turns them into a
public error.  The modules that used to define a public one still export it (the same class).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
from pathlib import Path

from support import source_tree

import agentflow
import agentflow.errors as errors

PACKAGE = Path(agentflow.__file__).resolve().parent

#: exception classes defined outside errors.py that never reach a caller: name → what they become
INTERNAL = {
    "SynErr": "the scanner's syntax error: a syntax-error Diagnostic or a SourceError",
    "StreamFailure": "a broken model stream: a ModelError (runtime/models/http.py)",
    "ReplyShapeError": "a provider reply of the wrong shape: a ModelError (runtime/models)",
    "ExtractionError": "no JSON in an agent's answer: a repair round or output_validation",
    "ExitOk": "an `exit` with status ok: control flow, caught by the executor",
    "LspError": "an error answer to the test/bench LSP client (lsp/client.py), not the server",
    "GenerationError": "a contract the test model cannot fill: a ModelError (models/test_model.py)",
    "Escape": "a path leaving the workspace: a tool_error (runtime/tools/confined.py)",
    "Guarded": "a file the process has open through SQLite: a tool_error (confined.py)",
    "TooManyLinks": "a symlink loop while resolving a path: a tool_error (confined.py)",
    "NotRegular": "a FIFO or device where a file was expected: a tool_error (confined.py)",
    "EvalEnded": "a busy evaluation ended by its deadline, timeout or a stop: a RunError of that "
    "code (runtime/interrupt.py)",
    "ForeignRecord": "a durable row of JSON whose shape agentflow never writes there (an "
    "UnreadableRecord): an InputError naming the run, like it",
    "UnreadableRun": "the InputError of a command that met a durable row it cannot read "
    "(runtime/durable/records.py unreadable_error): exit 1, the run named",
    "UnreadableRecord": "a durable row that is not agentflow's JSON: an InputError naming the "
    "run, or durable_replay_mismatch on replay (runtime/durable/records.py)",
    "EvalOffload": "an evaluation past its work budget on Temporal: the engine runs it again in "
    "a local activity (runtime/interrupt.py, durable/temporal_engine.py)",
    "NonJsonNumber": "NaN, Infinity or 1e999 in a JSON text: an InputError (api.py, durable/runs.py)"
    " or text checked like any wrong answer (hooks.py, serve_asks.py)",
    "DuplicateKey": "a key given twice in a JSON object a person gave: an InputError naming the"
    " key (api_run.py --input, hooks.py checked_answer) or an eval dataset's diagnostic",
}

#: public exceptions that moved into errors.py → the modules that still export them
MOVED = {
    "RunAborted": ["agentflow.runtime.hooks", "agentflow.runtime.executor"],
    "Stopped": ["agentflow.runtime.interrupt"],
    "ExitError": ["agentflow.runtime.control", "agentflow.runtime.executor"],
    "BadPath": ["agentflow.runtime.expressions", "agentflow.runtime"],
    "ExprError": ["agentflow.runtime.expressions"],
    "CompileError": ["agentflow.api", "agentflow"],
    "FormatError": ["agentflow.compiler.fmt"],
    "ContractError": ["agentflow.compiler.contracts"],
    "LoweringError": ["agentflow.compiler.lowering"],
}


@functools.cache
def _exception_classes() -> list[tuple[Path, ast.ClassDef]]:
    """Every class of the package that derives from a built-in exception, directly or through
    another class of the package (bases matched by name, to a fixed point)."""
    classes = [
        (source.path, node)
        for source in source_tree.sources(PACKAGE)  # each file parsed once per process
        for node in ast.walk(source.tree)
        if isinstance(node, ast.ClassDef)
    ]
    known = {n for n in dir(builtins) if n.endswith(("Error", "Exception", "Interrupt"))}
    known |= {"Exception", "BaseException"}
    found: dict[int, tuple[Path, ast.ClassDef]] = {}
    changed = True
    while changed:
        changed = False
        for path, node in classes:
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if id(node) not in found and bases & known:
                found[id(node)] = (path, node)
                known.add(node.name)
                changed = True
    return list(found.values())


def test_public_exceptions_are_defined_in_errors_py():
    outside = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.name}"
        for path, node in _exception_classes()
        if path.name != "errors.py" or path.parent != PACKAGE
        if not node.name.startswith("_") and node.name not in INTERNAL
    ]
    assert outside == [], (
        "public exception classes outside agentflow/errors.py (move them there, or make them "
        "private):\n" + "\n".join(outside)
    )


def test_the_internal_ones_still_exist():
    """The list above names only real classes (a renamed one must leave it)."""
    names = {node.name for _, node in _exception_classes()}
    assert set(INTERNAL) <= names


def test_every_exception_in_errors_py_is_a_flow_error():
    classes = [
        getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), BaseException)
    ]
    assert len(classes) >= 15
    for cls in classes:
        if cls is errors.Interrupted:
            assert issubclass(cls, KeyboardInterrupt) and not issubclass(cls, Exception)
        else:
            assert issubclass(cls, errors.FlowError), cls


def test_moved_exceptions_are_still_exported_where_they_were():
    for name, modules in MOVED.items():
        for module in modules:
            assert getattr(importlib.import_module(module), name) is getattr(errors, name), (
                module,
                name,
            )
