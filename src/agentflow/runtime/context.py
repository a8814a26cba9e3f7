"""What a run needs besides its plan and input: :class:`RunContext` (docs/spec/RUNTIME.md §1, §7,
§8).

One object shared by the three ways of running — :func:`~agentflow.runtime.executor.run_plan`,
:func:`~agentflow.runtime.chat.ask` and :func:`~agentflow.runtime.planner.plan_and_execute` — so
the catalog, model router, configuration, workspace, sinks, hooks, callable plans and shape cache
travel together instead of as eight keyword arguments each.  Each entry point takes a context,
keyword options (:class:`RunOptions`, the same eight names), or both (the options override the
context's fields)::

    ctx = RunContext(catalog=catalog, router=router, config=config, workspace="repo")
    result = await run_plan(plan, {"title": "…"}, ctx)
    result = await run_plan(plan, {"title": "…"}, ctx, hooks=my_hooks)   # one field changed
    result = await run_plan(plan, {"title": "…"}, catalog=catalog)        # options only

The classes named in annotations are imported for type checkers only: importing this module loads
neither pydantic nor httpx.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from agentflow.runtime.hooks import Hooks

if TYPE_CHECKING:
    from typing import Unpack

    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.events import Sink
    from agentflow.runtime.models.router import ModelRouter
    from agentflow.runtime.shape_cache import ShapeCache
    from agentflow.runtime.tools.catalog import Catalog

__all__ = ["RunContext", "RunOptions"]


class RunOptions(TypedDict, total=False):
    """The fields of a :class:`RunContext` as keyword options (every one optional); ``workspace``
    may be a string, ``sinks`` any iterable, ``hooks`` None."""

    catalog: Catalog | None
    router: ModelRouter | None
    config: Config | None
    workspace: Path | str | None
    sinks: Iterable[Sink]
    hooks: Hooks | None
    plans: Mapping[str, Plan] | None
    shape_cache: ShapeCache | Literal[False] | None


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """Everything a run uses besides the plan and its input (immutable; see :meth:`replace`).

    - ``catalog``: the tools ordinary steps and agents call (None: only control steps run).
    - ``router``: the model router (agent steps, ``infer`` gates, verify judges, the solver,
      ``flowc ask``'s chat model and the planner); None for runs that make no model call.
    - ``config``: the ``flow.toml`` configuration (agent profiles, teams, tool policy, limits).
    - ``workspace``: the root the file tools are confined to (default: the current directory
      when the context is made).
    - ``sinks``: event sinks (docs/spec/RUNTIME.md §8).  :func:`run_plan` closes them when the run
    ends;
      ``ask`` and ``plan_and_execute``, which run many plans, never do.
    - ``hooks``: the host's gate / on_tool_error / interlocutor (docs/spec/RUNTIME.md §7).
    - ``plans``: plans callable as ``plan__NAME`` besides the plan's own sub-plans;
      None means the catalog's (``catalog.plans``, the plans directory).
    - ``shape_cache``: what ``plan_and_execute`` reads and ``ask``/``plan_and_execute`` feed
      (None: the user's cache; ``False``: none).  :func:`run_plan` does not use it.
    """

    catalog: Catalog | None = None
    router: ModelRouter | None = None
    config: Config | None = None
    workspace: Path = field(default_factory=Path.cwd)
    sinks: tuple[Sink, ...] = ()
    hooks: Hooks = field(default_factory=Hooks)
    plans: Mapping[str, Plan] | None = None
    shape_cache: ShapeCache | Literal[False] | None = None

    def __post_init__(self) -> None:
        # untyped callers may still hand over the RunOptions forms: normalise them here too
        fields = _normalised(
            {"workspace": self.workspace, "sinks": self.sinks, "hooks": self.hooks}
        )
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def replace(self, **options: Unpack[RunOptions]) -> RunContext:
        """A copy with the given fields changed (same names and forms as :class:`RunOptions`)."""
        if not options:
            return self
        return dataclasses.replace(self, **_normalised(options))

    @classmethod
    def of(cls, context: RunContext | None, options: RunOptions) -> RunContext:
        """``context`` (default: an empty one) with ``options`` applied: how each entry point
        turns its ``context`` argument and keyword options into one context."""
        if context is None:
            return cls(**_normalised(options))
        return context.replace(**options)

    @property
    def callable_plans(self) -> dict[str, Plan]:
        """The plans callable as ``plan__NAME``: ``plans``, else the catalog's plans directory."""
        if self.plans is not None:
            return dict(self.plans)
        return dict(self.catalog.plans) if self.catalog is not None else {}


def _normalised(options: RunOptions) -> dict[str, Any]:
    """``options`` in the field types of :class:`RunContext`: ``workspace`` an absolute Path
    (None: the current directory), ``sinks`` a tuple, ``hooks`` never None."""
    out: dict[str, Any] = dict(options)
    if "workspace" in out:
        # absolute once: a relative `--workspace ws` must not prefix write scopes twice (ws/ws/out)
        workspace = out["workspace"]
        out["workspace"] = Path(workspace).absolute() if workspace is not None else Path.cwd()
    if "sinks" in out and not isinstance(out["sinks"], tuple):
        out["sinks"] = tuple(out["sinks"])
    if "hooks" in out and out["hooks"] is None:
        out["hooks"] = Hooks()
    return out
