"""The programs ``flowc serve --mcp DIR`` serves (:mod:`agentflow.serve`): every ``.flow``
program and plan file of the directory, each loaded as one MCP tool (:class:`ServedFlow`: its
name, description, input and output schemas) by :func:`discover`, with the files left out and
why.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow import api_compile
from agentflow.compiler.contracts import ContractError, contract_for
from agentflow.compiler.types import JSON
from agentflow.errors import FlowError
from agentflow.ir.loader import load_plan, load_plan_data

__all__ = ["PLAN_SUFFIXES", "Served", "ServedFlow", "discover", "load_flow"]

#: File name endings of the plans a directory serves (``.flow`` programs are compiled).
PLAN_SUFFIXES = (".plan.yaml", ".plan.yml", ".plan.json")


@dataclass
class ServedFlow:
    """One program served as an MCP tool (see the module doc)."""

    name: str
    path: Path
    plan: Any
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrap_input: bool = False
    wrap_output: bool = False
    steps: int = 0
    #: a `.flow` with no stage: declarations for other flows to import (not served)
    declarations_only: bool = False


@dataclass
class Served:
    """What a directory serves: ``flows`` by tool name, and ``problems`` (one line each) for
    the files that could not be served (compile errors, duplicate names)."""

    flows: dict[str, ServedFlow] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def _describe(path: Path, plan: Any, doc: str | None) -> str:
    text = (doc or getattr(plan, "description", None) or "").strip()
    return text or f"Run {path.name}"


def _leading_doc(text: str) -> str | None:
    """The ``///`` doc comment that opens a program (before its first declaration), if any."""
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("///"):
            lines.append(stripped[3:].strip())
        elif stripped and not stripped.startswith("//"):
            break
    return "\n".join(lines).strip() or None


def load_flow(path: Path) -> ServedFlow:
    """Compile or load one program and describe it as a tool.  Raises FlowError."""
    output_schema: dict[str, Any] | None = None
    doc: str | None = None
    declarations_only = False
    if path.suffix == ".flow":
        compiled = api_compile.compile_flow(path)
        declarations_only = not compiled.check.stages
        plan = load_plan_data(compiled.plan, str(path))
        check = compiled.check
        doc = _leading_doc(path.read_text(encoding="utf-8"))
        if check.output_type != JSON:
            with contextlib.suppress(ContractError):
                output_schema = contract_for(check.output_type, check.env)
    else:
        plan = load_plan(path)
    input_schema = plan.input_schema or {"type": "object"}
    wrap_input = not _object_schema(input_schema)
    if wrap_input:
        input_schema = {
            "type": "object",
            "properties": {"input": input_schema},
            "required": ["input"],
        }
    wrap_output = output_schema is not None and not _object_schema(output_schema)
    if wrap_output:
        defs = output_schema.pop("$defs", None)  # type: ignore[union-attr]
        output_schema.pop("$schema", None)  # type: ignore[union-attr]
        output_schema = {
            "type": "object",
            "properties": {"result": output_schema},
            "required": ["result"],
            **({"$defs": defs} if defs else {}),
        }
    return ServedFlow(
        name=plan.name,
        path=path,
        plan=plan,
        description=_describe(path, plan, doc),
        input_schema=input_schema,
        output_schema=output_schema,
        wrap_input=wrap_input,
        wrap_output=wrap_output,
        steps=len(plan.steps),
        declarations_only=declarations_only,
    )


def discover(directory: Path) -> Served:
    """The programs of ``directory`` (sorted by file name) as tools; never raises for a program
    that does not compile (it is left out, with its first problem in ``problems``)."""
    served = Served()
    files = sorted(
        p for p in directory.iterdir() if p.suffix == ".flow" or p.name.endswith(PLAN_SUFFIXES)
    )
    for path in files:
        try:
            if not path.is_file():  # a directory, a dangling link: not a program
                continue
            flow = load_flow(path)
        except OSError as exc:  # a link to a name too long: left out, saying why
            served.problems.append(f"{path.name}: not served: {exc.strerror or exc}")
            continue
        except FlowError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            served.problems.append(f"{path.name}: not served: {first}")
            continue
        if flow.declarations_only:  # a file of types the flows import (programs.md "import")
            served.problems.append(f"{path.name}: not served: it has no stage (declarations only)")
            continue
        if flow.name in served.flows:
            other = served.flows[flow.name].path.name
            served.problems.append(
                f"{path.name}: not served: its name `{flow.name}` is {other}'s too"
            )
            continue
        served.flows[flow.name] = flow
    return served
