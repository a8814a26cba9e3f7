"""Benchmark: agentflow's plan executor against LangGraph, in one process (issue #4).

Two workloads, each built in both systems with trivial async nodes/tools (so the figure is the
orchestration overhead):

- a 3-node chain: ``a → b → c``, each adding 1 to a number passed along;
- a 5-way fan-out: five branches run concurrently, then a join sums their values
  (agentflow: a ``parallel`` step and a ``value`` step; LangGraph: five nodes from START with an
  ``operator.add`` reducer, joined by one node).

Each invocation reuses the loaded plan / compiled graph; prints µs per invocation for both and the
ratio LangGraph / agentflow (> 1 means agentflow is faster).  Needs the ``bench`` extra.

    .venv/bin/python bench/vs_langgraph.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import time
from typing import Annotated, TypedDict

from agentflow.ir.loader import load_plan_data
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog, Tool

try:
    from langgraph.graph import END, START, StateGraph
except ImportError:  # pragma: no cover
    raise SystemExit("langgraph is not installed: pip install -e '.[bench]'") from None


# ---------------------------------------------------------------------------------------------
# agentflow


async def _inc(args, ctx):
    return args["n"] + 1


async def _branch(args, ctx):
    return args["k"] * 10


def agentflow_chain():
    plan = load_plan_data(
        {
            "version": 1,
            "name": "chain",
            "steps": [
                {"id": "a", "tool_name": "user__inc", "input": {"n": "{{ input.n }}"}},
                {"id": "b", "tool_name": "user__inc", "input": {"n": "{{ a }}"}},
                {"id": "c", "tool_name": "user__inc", "input": {"n": "{{ b }}"}},
            ],
        },
        "chain",
    )
    return plan


def agentflow_fanout():
    branches = {f"b{k}": {"tool_name": "user__branch", "input": {"k": k}} for k in range(1, 6)}
    return load_plan_data(
        {
            "version": 1,
            "name": "fanout",
            "steps": [
                {"id": "fan", "tool_name": "parallel", "input": {"branches": branches}},
                {
                    "id": "join",
                    "tool_name": "value",
                    "input": {"value": "{{ fan.b1 + fan.b2 + fan.b3 + fan.b4 + fan.b5 }}"},
                },
            ],
        },
        "fanout",
    )


CATALOG = Catalog(
    [
        Tool(name="user__inc", description="n+1", input_schema={}, func=_inc),
        Tool(name="user__branch", description="k*10", input_schema={}, func=_branch),
    ]
)


# ---------------------------------------------------------------------------------------------
# LangGraph


class ChainState(TypedDict):
    n: int


class FanState(TypedDict):
    values: Annotated[list[int], operator.add]
    total: int


def langgraph_chain():
    async def inc(state: ChainState) -> dict:
        return {"n": state["n"] + 1}

    g = StateGraph(ChainState)
    for name in ("a", "b", "c"):
        g.add_node(name, inc)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile()


def langgraph_fanout():
    g = StateGraph(FanState)

    def make(k: int):
        async def branch(state: FanState) -> dict:
            return {"values": [k * 10]}

        return branch

    async def join(state: FanState) -> dict:
        return {"total": sum(state["values"])}

    for k in range(1, 6):
        g.add_node(f"b{k}", make(k))
        g.add_edge(START, f"b{k}")
        g.add_edge(f"b{k}", "join")
    g.add_node("join", join)
    g.add_edge("join", END)
    return g.compile()


# ---------------------------------------------------------------------------------------------


async def time_it(fn, runs: int) -> float:
    for _ in range(max(10, runs // 10)):  # warm-up
        await fn()
    t0 = time.perf_counter()
    for _ in range(runs):
        await fn()
    return (time.perf_counter() - t0) / runs * 1e6


async def main_async(runs: int) -> None:
    chain_plan, fan_plan = agentflow_chain(), agentflow_fanout()
    chain_graph, fan_graph = langgraph_chain(), langgraph_fanout()

    async def af_chain():
        res = await run_plan(chain_plan, {"n": 0}, catalog=CATALOG)
        assert res.output == 3, res

    async def lg_chain():
        out = await chain_graph.ainvoke({"n": 0})
        assert out["n"] == 3, out

    async def af_fan():
        res = await run_plan(fan_plan, {}, catalog=CATALOG)
        assert res.output == 150, res

    async def lg_fan():
        out = await fan_graph.ainvoke({"values": [], "total": 0})
        assert out["total"] == 150, out

    print(f"{'workload':<22}{'agentflow µs/run':>18}{'langgraph µs/run':>18}{'ratio lg/af':>14}")
    for label, af, lg in (("3-node chain", af_chain, lg_chain), ("5-way fan-out", af_fan, lg_fan)):
        a = await time_it(af, runs)
        b = await time_it(lg, runs)
        print(f"{label:<22}{a:>18.1f}{b:>18.1f}{b / a:>13.2f}×")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2000)
    args = ap.parse_args()
    asyncio.run(main_async(args.runs))


if __name__ == "__main__":
    main()
