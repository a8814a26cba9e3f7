"""`flowc gen python`: typed client modules of `.flow` programs (:func:`agentflow.api.gen_python`,
docs/reference/python-clients.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from agentflow import api
from agentflow.cli.common import _err, _fail, _flow_files, no_such
from agentflow.errors import FlowError, NotAPlan


@click.group("gen")
def gen_cmd() -> None:
    """Generate code from .flow programs (typed clients)."""


@gen_cmd.command("python")
@click.argument("path", type=click.Path())
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(),
    help="The module to write (a FLOW), or the directory to write one module per .flow into "
    "(a DIR). Without it a FLOW's module is printed.",
)
def gen_python_cmd(path: str, out: str | None) -> None:
    """Write a typed Python client of a .flow program (Pydantic models of its types, typed run
    functions): `flowc gen python FLOW -o module.py`, or `flowc gen python DIR -o OUTDIR` for
    every .flow under DIR (each as OUTDIR/<file stem, snake case>.py). Exit code 0: written;
    1: a program has errors or a type with no JSON form; 2: a file could not be read or
    written."""
    source = Path(path)
    if source.is_dir():
        if out is None:
            raise click.UsageError("a directory needs -o OUTDIR (one module per .flow file)")
        files = _flow_files((path,))
        if not files:
            _err(f"error: no .flow files in {path}")
            sys.exit(2)
        targets = [(f, Path(out) / f"{_module_name(f)}.py") for f in files]
    elif source.is_file():
        targets = [(source, Path(out) if out else Path.cwd() / f"{_module_name(source)}.py")]
    else:
        raise no_such(str(path), "file or directory")
    for flow, module in targets:
        try:
            text = api.gen_python(flow, module)
        except NotAPlan as e:  # a library: nothing to generate (programs.md "Libraries")
            _err(str(e))
            continue
        except FlowError as e:  # errors in the program, or a type with no JSON form
            _fail(e)
        except OSError as e:
            _err(f"error: cannot read {flow}: {e.strerror or e}")
            sys.exit(2)
        if out is None:
            click.echo(text, nl=False)
            continue
        try:
            module.parent.mkdir(parents=True, exist_ok=True)
            module.write_text(text, encoding="utf-8")
        except OSError as e:
            _err(f"error: cannot write {module}: {e.strerror or e}")
            sys.exit(2)
        _err(f"wrote {module}")


def _module_name(flow: Path) -> str:
    """A Python module name for a `.flow` file: its stem in snake case (``bug-triage`` →
    ``bug_triage``)."""
    name = re.sub(r"\W", "_", flow.stem).lower()
    return name if name and not name[0].isdigit() else f"flow_{name}"
