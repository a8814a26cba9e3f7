"""The embedding API: everything the CLI does, as documented Python functions.

- :func:`check` — parse and type-check a `.flow` file (docs/spec/LANGUAGE.md §9);
- :func:`compile_flow` — check and lower it to a plan (docs/spec/LANGUAGE.md §10);
- :func:`load` — a runnable :class:`~agentflow.ir.models.Plan` from a `.flow` or plan file;
- :func:`check_plan` — every problem of a plan file, tool names included, as diagnostics;
- :func:`run` / :func:`run_sync` — execute it (docs/spec/RUNTIME.md §1) and return a
  :class:`~agentflow.runtime.result.RunResult`;
- :func:`build_catalog` — the tool catalog of a configuration, its plans directory's `.flow`
  files compiled here (the runtime never calls the compiler: the api hands it ready plans
  or :func:`load` as the loader).

This module is the front door only: each name is defined in the module of the api that loads
what it needs, and loads (PEP 562) on first use, so that ``import agentflow.api`` (every
``flowc`` command) costs nothing and ``flowc check`` loads the front end alone
(docs/decisions.md "The api split by what it loads"):

- :mod:`agentflow.api_check` — the front end: checking, diagnostics, formatting, clients;
- :mod:`agentflow.api_compile` — compiled plans: compile, load, dump, cost (Pydantic);
- :mod:`agentflow.api_run` — running: run, run_sync, resume_run, work, build_catalog,
  sinks, hooks, configuration (the runtime);
- :mod:`agentflow.api_durable` — durable runs seen from outside (``flowc runs``, ``answer``,
  ``cancel``);
- :mod:`agentflow.api_commands` — check_plan, graph, report, list_tools, ask_sync;
- :mod:`agentflow.api_evals` — check with eval datasets, evaluations, ``test`` blocks;
- :mod:`agentflow.api_serve` — the servers (``flowc serve --mcp``, ``flowc ui``).

``agentflow.api.run is agentflow.api_run.run``: a name is the defining module's object, so a
test patches it where it is used.  Errors in the user's files come back as
:class:`agentflow.errors.FlowError` subclasses that name file, line and column; nothing here
prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentflow._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use
    from agentflow.api_check import (
        BUILTIN_SCHEMA_TYPES,
        FormatError,
        agent_profile_warnings,
        check_source,
        config_file,
        diagnostics_summary,
        expression_position,
        extern_declaration,
        extern_tool_warnings,
        format_flow_diff,
        format_flow_file,
        gen_python,
        read_source,
        render_diagnostics,
        source_excerpt,
        stale_modules,
        type_schema,
    )
    from agentflow.api_commands import (
        PlanCheck,
        ask_progress_sink,
        ask_sync,
        check_plan,
        durable_ask_result,
        graph,
        list_tools,
        report,
    )
    from agentflow.api_compile import (
        CompiledFlow,
        compile_checked,
        compile_flow,
        compile_source,
        cost_warnings,
        format_plan_file,
        library_message,
        library_tests_note,
        load,
        output_place,
        plan_from_data,
        plan_from_text,
        plan_text,
        worst_case_cost,
    )
    from agentflow.api_config import config_diagnostics
    from agentflow.api_durable import (
        answer_command,
        answer_durable,
        answer_name,
        answer_run,
        answer_run_sync,
        cancel_durable,
        count_durable_runs,
        durable_database,
        durable_run_database,
        list_durable_runs,
        missing_durable_database,
        open_durable,
        recent_durable_databases,
        recorded_run,
        redrive_id,
        run_id_error,
        show_durable_run,
        shutdown_durable,
    )
    from agentflow.api_evals import (
        check,
        compare_eval,
        eval_datasets_check,
        eval_page,
        evaluate,
        evaluate_async,
        explore,
        interrupted_report,
        read_baseline,
        run_tests,
        run_tests_async,
    )
    from agentflow.api_run import (
        CLOSE_LIMIT_S,
        build_catalog,
        callback_sink,
        console_sink,
        enable_watchdog,
        jsonl_sink,
        load_config,
        model_option_error,
        parse_input,
        plan_model_users,
        plan_needs_model,
        resume_run,
        resume_run_sync,
        run,
        run_sync,
        shape_cache,
        shape_cache_note,
        stopped_summary,
        telemetry_settings,
        terminal_hooks,
        work,
    )
    from agentflow.api_serve import (
        serve_mcp,
        serve_ui,
    )

    # attributes of the api beyond ``__all__``: the error classes, annotations' types
    # (re-exported explicitly: `X as X`, for type checkers' no-implicit-reexport)
    from agentflow.compiler.checker import CheckResult as CheckResult
    from agentflow.core.diagnostics import Diagnostic as Diagnostic
    from agentflow.errors import CompileError as CompileError
    from agentflow.errors import ConfigError as ConfigError
    from agentflow.errors import ContractError as ContractError
    from agentflow.errors import FlowError as FlowError
    from agentflow.errors import InputError as InputError
    from agentflow.errors import PlanLoadError as PlanLoadError
    from agentflow.runtime.result import RunResult as RunResult

__all__ = [
    "CompileError",
    "CompiledFlow",
    "build_catalog",
    "check",
    "compile_checked",
    "compile_flow",
    "compile_source",
    "load",
    "run",
    "run_sync",
    "resume_run",
    "resume_run_sync",
    "answer_name",
    "answer_run",
    "answer_run_sync",
    "plan_text",
    "run_tests",
    "run_tests_async",
    "parse_input",
    "model_option_error",
    "plan_model_users",
    "plan_needs_model",
    "graph",
    "report",
    "durable_database",
    "durable_run_database",
    "recent_durable_databases",
    "list_durable_runs",
    "count_durable_runs",
    "run_id_error",
    "redrive_id",
    "answer_command",
    "show_durable_run",
    "recorded_run",
    "answer_durable",
    "missing_durable_database",
    "cancel_durable",
    "ask_progress_sink",
    "durable_ask_result",
    "evaluate",
    "evaluate_async",
    "compare_eval",
    "read_baseline",
    "interrupted_report",
    "eval_page",
    "eval_datasets_check",
    "cost_warnings",
    "check_source",
    "config_file",
    "read_source",
    "list_tools",
    "ask_sync",
    "FormatError",
    "callback_sink",
    "console_sink",
    "diagnostics_summary",
    "enable_watchdog",
    "explore",
    "expression_position",
    "extern_declaration",
    "format_flow_file",
    "format_flow_diff",
    "format_plan_file",
    "jsonl_sink",
    "load_config",
    "plan_from_data",
    "plan_from_text",
    "render_diagnostics",
    "serve_mcp",
    "serve_ui",
    "shape_cache",
    "shape_cache_note",
    "open_durable",
    "shutdown_durable",
    "stopped_summary",
    "stale_modules",
    "source_excerpt",
    "agent_profile_warnings",
    "extern_tool_warnings",
    "config_diagnostics",
    "output_place",
    "telemetry_settings",
    "terminal_hooks",
    "type_schema",
    "BUILTIN_SCHEMA_TYPES",
    "work",
    "worst_case_cost",
    "check_plan",
    "PlanCheck",
    "CLOSE_LIMIT_S",
    "gen_python",
    "library_message",
    "library_tests_note",
]

#: Public name → the module that defines it (loaded on first use of one of its names).
_EXPORTS: dict[str, str] = {
    "CompileError": "agentflow.errors",
    "CompiledFlow": "agentflow.api_compile",
    "build_catalog": "agentflow.api_run",
    "check": "agentflow.api_evals",
    "compile_checked": "agentflow.api_compile",
    "compile_flow": "agentflow.api_compile",
    "compile_source": "agentflow.api_compile",
    "load": "agentflow.api_compile",
    "library_message": "agentflow.api_compile",
    "library_tests_note": "agentflow.api_compile",
    "run": "agentflow.api_run",
    "run_sync": "agentflow.api_run",
    "resume_run": "agentflow.api_run",
    "resume_run_sync": "agentflow.api_run",
    "answer_name": "agentflow.api_durable",
    "answer_run": "agentflow.api_durable",
    "answer_run_sync": "agentflow.api_durable",
    "plan_text": "agentflow.api_compile",
    "run_tests": "agentflow.api_evals",
    "run_tests_async": "agentflow.api_evals",
    "parse_input": "agentflow.api_run",
    "model_option_error": "agentflow.api_run",
    "plan_needs_model": "agentflow.api_run",
    "plan_model_users": "agentflow.api_run",
    "graph": "agentflow.api_commands",
    "report": "agentflow.api_commands",
    "durable_database": "agentflow.api_durable",
    "durable_run_database": "agentflow.api_durable",
    "recent_durable_databases": "agentflow.api_durable",
    "list_durable_runs": "agentflow.api_durable",
    "count_durable_runs": "agentflow.api_durable",
    "run_id_error": "agentflow.api_durable",
    "redrive_id": "agentflow.api_durable",
    "answer_command": "agentflow.api_durable",
    "show_durable_run": "agentflow.api_durable",
    "recorded_run": "agentflow.api_durable",
    "answer_durable": "agentflow.api_durable",
    "missing_durable_database": "agentflow.api_durable",
    "cancel_durable": "agentflow.api_durable",
    "ask_progress_sink": "agentflow.api_commands",
    "durable_ask_result": "agentflow.api_commands",
    "evaluate": "agentflow.api_evals",
    "evaluate_async": "agentflow.api_evals",
    "compare_eval": "agentflow.api_evals",
    "read_baseline": "agentflow.api_evals",
    "interrupted_report": "agentflow.api_evals",
    "eval_page": "agentflow.api_evals",
    "eval_datasets_check": "agentflow.api_evals",
    "cost_warnings": "agentflow.api_compile",
    "check_source": "agentflow.api_check",
    "config_file": "agentflow.api_check",
    "read_source": "agentflow.api_check",
    "list_tools": "agentflow.api_commands",
    "ask_sync": "agentflow.api_commands",
    "FormatError": "agentflow.api_check",
    "callback_sink": "agentflow.api_run",
    "console_sink": "agentflow.api_run",
    "diagnostics_summary": "agentflow.api_check",
    "enable_watchdog": "agentflow.api_run",
    "explore": "agentflow.api_evals",
    "expression_position": "agentflow.api_check",
    "extern_declaration": "agentflow.api_check",
    "format_flow_file": "agentflow.api_check",
    "format_flow_diff": "agentflow.api_check",
    "format_plan_file": "agentflow.api_compile",
    "jsonl_sink": "agentflow.api_run",
    "load_config": "agentflow.api_run",
    "plan_from_data": "agentflow.api_compile",
    "plan_from_text": "agentflow.api_compile",
    "render_diagnostics": "agentflow.api_check",
    "serve_mcp": "agentflow.api_serve",
    "serve_ui": "agentflow.api_serve",
    "shape_cache": "agentflow.api_run",
    "shape_cache_note": "agentflow.api_run",
    "stopped_summary": "agentflow.api_run",
    "open_durable": "agentflow.api_durable",
    "shutdown_durable": "agentflow.api_durable",
    "stale_modules": "agentflow.api_check",
    "source_excerpt": "agentflow.api_check",
    "agent_profile_warnings": "agentflow.api_check",
    "extern_tool_warnings": "agentflow.api_check",
    "config_diagnostics": "agentflow.api_config",
    "output_place": "agentflow.api_compile",
    "telemetry_settings": "agentflow.api_run",
    "terminal_hooks": "agentflow.api_run",
    "type_schema": "agentflow.api_check",
    "BUILTIN_SCHEMA_TYPES": "agentflow.api_check",
    "work": "agentflow.api_run",
    "worst_case_cost": "agentflow.api_compile",
    "check_plan": "agentflow.api_commands",
    "PlanCheck": "agentflow.api_commands",
    "CLOSE_LIMIT_S": "agentflow.api_run",
    "gen_python": "agentflow.api_check",
    "ConfigError": "agentflow.errors",
    "ContractError": "agentflow.errors",
    "FlowError": "agentflow.errors",
    "InputError": "agentflow.errors",
    "PlanLoadError": "agentflow.errors",
    "CheckResult": "agentflow.compiler.checker",
    "Diagnostic": "agentflow.core.diagnostics",
    "RunResult": "agentflow.runtime.result",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
