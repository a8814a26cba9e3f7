"""`flowc` commands that read a program or a plan and print, running nothing: ``schema``
(a type's JSON Schema), ``plan validate`` and ``plan fmt`` (their group, ``flowc plan``, is
:mod:`agentflow.cli`'s), ``tools`` (the catalog) and ``fmt`` (`.flow` files).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentflow import api
from agentflow.cli.common import (
    Styled,
    _err,
    _fail,
    _flow_files,
    _json_out,
    _out,
    _render,
    error_text,
    given_files,
    no_such,
)
from agentflow.core.diagnostics import did_you_mean
from agentflow.errors import ContractError, FlowError, PlanLoadError


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("type_name", required=False)
@click.option(
    "--input",
    "show_input",
    is_flag=True,
    help="Print the schema the run's input is validated against (its `input` type).",
)
def schema(file: str, type_name: str | None, show_input: bool) -> None:
    """Print the JSON Schema contract of TYPE_NAME declared in FILE, or with --input the schema
    of FILE's input (a schema without constraints when FILE declares no `input`: any JSON
    value is accepted)."""
    if type_name is not None and show_input:
        raise click.UsageError("give either a TYPE_NAME or --input, not both")
    if type_name is None and not show_input:
        raise click.UsageError(
            f"give the TYPE_NAME whose schema to print (flowc schema {file} NAME), or --input "
            "for the schema of the run's input"
        )
    if not Path(file).is_file():
        raise no_such(file)
    try:
        result = api.check(file)
    except OSError as e:
        _err(f"error: {file}: cannot read: {e.strerror or e}")
        sys.exit(1)
    own = [d for d in result.errors if d.span.file == file]  # an eval's dataset is not FILE
    if own:
        _err(_render(own, {file: api.read_source(file)}, "text"))
        sys.exit(1)
    if (
        not show_input
        and type_name not in result.env.names()
        and type_name not in api.BUILTIN_SCHEMA_TYPES
    ):
        assert type_name is not None  # given when --input is not (checked above)
        declared = sorted(result.env.names())
        hint = did_you_mean(type_name, declared)
        if hint is None:
            lower = {n.lower(): n for n in declared}
            if type_name.lower() in lower:
                hint = f"did you mean `{lower[type_name.lower()]}`?"
        if hint is None:
            # extern types have no schema: not worth listing
            usable = [n for n in declared if n not in result.env.externs]
            listed = ", ".join(f"`{n}`" for n in usable)
            hint = f"declared types: {listed}" if usable else "it declares no types"
        _err(f"error: {file}: no type `{type_name}`; {hint}")
        sys.exit(1)
    try:
        data = api.type_schema(result, None if show_input else type_name)
    except ContractError as e:
        _err(f"{file}: {e}")
        sys.exit(1)
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


@click.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    callback=given_files,
    help="flow.toml for tool resolution.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    help="Output format of the diagnostics.",
)
def plan_validate(file: str, config: str | None, fmt: str) -> None:
    """Validate a plan file: YAML, structure, templates, and tool names against the catalog,
    every problem in one run (exit 1 when there is one)."""
    if not Path(file).is_file():
        raise no_such(file)
    try:
        found = api.check_plan(file, config=config)
    except FlowError as e:
        _fail(e)
    diags = found.diagnostics
    if fmt != "text":
        click.echo(_render(diags, found.sources, fmt))  # JSON / SARIF: data, as it is
    elif diags:  # like `flowc check`: the report on stdout, the count on stderr
        out = api.render_diagnostics(diags, found.sources, color=sys.stdout.isatty())
        _out(Styled(out), nl=not out.endswith("\n"))  # the renderer escapes the files' text
        sys.stdout.flush()
        _err(f"{file}: {api.diagnostics_summary(diags)}")
    else:
        _out(f"{file}: ok")
    sys.exit(0 if found.ok else 1)


@click.command("tools")
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON (full schemas).")
@click.option(
    "--no-connect", is_flag=True, help="Do not start MCP servers (list each as SERVER__*)."
)
@click.option(
    "--extern",
    "as_extern",
    is_flag=True,
    help="Print an `extern tool` declaration for each non-builtin tool, to paste into a .flow.",
)
def tools_cmd(config: str | None, as_json: bool, no_connect: bool, as_extern: bool) -> None:
    """List the tool catalog: name, source, description and input schema summary of every tool
    (builtin, user__ Python, plan__ and MCP server__ tools) the configuration provides."""
    try:
        rows, errors = api.list_tools(config, connect=not no_connect)
    except FlowError as e:
        _err(error_text(e))
        sys.exit(1)
    if as_extern:
        declarable = [
            r for r in rows if r["source"] != "builtin" and r.get("kind", "tool") == "tool"
        ]  # builtins are declared by the prelude; servers, resources, prompts are no tools
        if not declarable and not errors:
            _err(
                "no tools to declare: the builtins are declared already; user tools come from "
                "`[tools] modules`, MCP tools from `[mcp.NAME]`, plan tools from `[plans] dir` "
                "in flow.toml"
            )
        for r in declarable:
            try:
                _out(
                    api.extern_declaration(
                        r["name"], r["input_schema"], r["description"], r.get("output_schema")
                    )
                )
            except ValueError as e:
                _out(f"// {r['name']}: not declarable ({e})")
    elif as_json:
        click.echo(_json_out(rows))  # an MCP server's schema may hold NaN
    else:
        width = max((len(r["name"]) for r in rows), default=10)
        swidth = max((len(r["source"]) for r in rows), default=6)
        for r in rows:
            desc = (r["description"] or "").strip().splitlines()
            first = desc[0] if desc else ""
            first = first if len(first) <= 72 else first[:71] + "…"
            _out(f"{r['name']:<{width}}  {r['source']:<{swidth}}  {first}")
            if r["summary"]:
                _out(f"{'':<{width}}  {'':<{swidth}}  ({r['summary']})")
    for message in errors:
        _err(f"error: {message}")
    sys.exit(1 if errors else 0)


@click.command("fmt")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the file is not canonical.")
def plan_fmt(file: str, check_only: bool) -> None:
    """Rewrite a plan file in canonical form (snake_case field names, fixed order)."""
    path = Path(file)
    if not path.is_file():
        raise no_such(file)
    if path.suffix == ".flow":
        raise click.UsageError(f"{file} is a .flow program, not a plan: use `flowc fmt {file}`")
    try:
        text, new = api.format_plan_file(path)
    except PlanLoadError as e:
        _fail(e)
    if check_only:
        if new != text:
            _err(f"{file}: would reformat")
            sys.exit(1)
        return
    if new != text:
        path.write_text(new, encoding="utf-8")
        _err(f"formatted {file}")


@click.command("fmt")
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if a file is not canonical.")
@click.option(
    "--diff",
    "as_diff",
    is_flag=True,
    help="Print what would change as a unified diff; exit 1 if any.",
)
def fmt_cmd(paths: tuple[str, ...], check_only: bool, as_diff: bool) -> None:
    """Rewrite .flow files in canonical layout (directories are searched for *.flow)."""
    failed = changed = 0
    files = _flow_files(paths)
    check_only = check_only or as_diff  # --diff writes nothing either
    for f in files:
        try:
            if as_diff:
                diff = api.format_flow_diff(f)
                if diff:
                    changed += 1
                    _out(diff, nl=False)
                    _err(f"{f}: would reformat")
            elif api.format_flow_file(f, check=check_only):
                changed += 1
                _err(f"{f}: would reformat" if check_only else f"formatted {f}")
        except api.FormatError as e:
            failed += 1
            _err(f"error: {e.message}")
        except OSError as e:
            failed += 1
            _err(f"{f}: cannot read: {e.strerror or e}")
    if failed or (check_only and changed):
        sys.exit(1)
    if not check_only and not changed:
        _err(f"{len(files)} file(s) already formatted")
