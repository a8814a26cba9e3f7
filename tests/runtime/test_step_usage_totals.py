"""``StepUsage.total``: the usage of a step path and everything nested under it, kept per path
prefix as calls are counted (a look-up per finished step, not a scan of every step so far)."""

from __future__ import annotations

from types import SimpleNamespace

from agentflow.runtime.result import StepUsage


def call(path, inp, out, cost=None, **extra):
    data = {"input_tokens": inp, "output_tokens": out, "role": "chat", **extra}
    if cost is not None:
        data["cost"] = cost
    return SimpleNamespace(kind="model_call", path=path, data=data)


def test_a_total_sums_a_step_and_its_nested_steps_only():
    usage = StepUsage()
    for event in (
        call("E3", 10, 1, cost=0.1),
        call("E3/do.2/E10", 5, 2, cost=0.2, cache_read_tokens=4),
        call("E30", 100, 100),  # a sibling whose id starts with "E3": not nested under E3
        call("E3/do.2/E10", 1, 1, reused=True),  # reused by a replan: free
    ):
        usage.handle(event)
    assert usage.total("E3") == {
        "inferences": 2,
        "input_tokens": 15,
        "output_tokens": 3,
        "cache_read_tokens": 4,
        "cost": 0.3,
    }
    assert usage.total("E3/do.2") == {
        "inferences": 1,
        "input_tokens": 5,
        "output_tokens": 2,
        "cache_read_tokens": 4,
        "cost": 0.2,
    }
    assert usage.total("E30") == {"inferences": 1, "input_tokens": 100, "output_tokens": 100}
    assert usage.total("E4") is None and usage.total("E3/do.1") is None
    # a total is a copy: changing it changes nothing kept
    usage.total("E3")["inferences"] = 99  # type: ignore[index]
    assert usage.total("E3")["inferences"] == 2  # type: ignore[index]
