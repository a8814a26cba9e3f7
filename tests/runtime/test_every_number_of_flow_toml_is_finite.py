"""Every float key of `flow.toml` refuses TOML's `nan` and `inf` at load, at its file:line, as
`backoff_base = nan` always was: `temperature = nan` used to load and fail at run time with
"Out of range float values are not JSON compliant" (the request body). The class is closed:
every float field of every config table, reached from ``Config``, refuses a non-finite value.

Root cause: only some fields carried ``allow_inf_nan=False``; ``temperature``, the MCP
``timeout``/``connect_timeout`` did not. The config models' common base now sets it for all."""

from __future__ import annotations

import math
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from agentflow.errors import ConfigError
from agentflow.runtime import config as config_module
from agentflow.runtime.config import Config, load_config


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for field in model.model_fields.values():
        for arg in _leaves(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                _models(arg, seen)


def _leaves(annotation: object) -> list[object]:
    args = typing.get_args(annotation)
    if not args:
        return [annotation]
    return [leaf for arg in args for leaf in _leaves(arg)]


def _float_fields() -> list[tuple[type[BaseModel], str]]:
    seen: set[type[BaseModel]] = set()
    _models(Config, seen)
    _models(config_module.ResolvedModel, seen)
    found = []
    for model in seen:
        for name, field in model.model_fields.items():
            if float in _leaves(field.annotation):
                found.append((model, name))
    return sorted(found, key=lambda f: (f[0].__name__, f[1]))


FLOAT_FIELDS = _float_fields()


def test_the_config_has_float_fields_to_check():
    names = {name for _, name in FLOAT_FIELDS}
    assert {"temperature", "timeout", "connect_timeout", "backoff_base", "rate_limit"} <= names


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    ("model", "name"), FLOAT_FIELDS, ids=[f"{m.__name__}.{n}" for m, n in FLOAT_FIELDS]
)
def test_every_float_field_refuses_a_non_finite_number(model, name, value):
    with pytest.raises(ValidationError) as info:
        model.model_validate({name: value})
    assert any(e["loc"] == (name,) and e["type"] == "finite_number" for e in info.value.errors()), (
        info.value.errors()
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_temperature_is_refused_at_load_with_its_line(tmp_path: Path, value: str):
    path = tmp_path / "flow.toml"
    path.write_text(
        f'[models.named.fast]\nprovider = "openai"\nmodel = "m"\ntemperature = {value}\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    message = str(info.value)
    assert message.startswith(f"{path}:4:1: [models.named.fast] temperature: "), message
    assert "finite number" in message and f"got the number {value}" in message, message


def test_an_mcp_servers_infinite_timeout_is_refused_at_load(tmp_path: Path):
    path = tmp_path / "flow.toml"
    path.write_text('[mcp.x]\ncommand = "x"\ntimeout = inf\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r":3:1: \[mcp.x\] timeout: .*finite"):
        load_config(path, env={})
