"""The connection to a Temporal server (``[durable] engine = "temporal"``, docs/durable.md
"Temporal"): the ``temporal://`` URL of a configuration and its :class:`Target`, the names of
agentflow's workflows and signal, the payload converter (agentflow's JSON records, never a
pickle) with its claim-check store, and :func:`client_for`.

Below the engine (:mod:`.temporal_engine`, which re-exports every name here): ``flowc runs``,
``runs show``, ``answer`` and ``cancel`` of a Temporal run read and message its workflows
through a client without loading the executor, the model clients or the tools
(docs/decisions.md "What flowc runs show loads").  ``temporalio`` loads on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import gc
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlencode

from agentflow.core.version import __version__
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, RunError
from agentflow.runtime.durable.log_file import log_handler
from agentflow.runtime.durable.records import JsonRecords

if TYPE_CHECKING:
    from agentflow.runtime.config import Config

__all__ = [
    "BUDGET_WORKFLOW",
    "COMMIT_ACTIVITY",
    "OPERATION",
    "CLAIM_ENCODING",
    "JSON_ENCODING",
    "END_MEMO",
    "END_PAUSE_ENV",
    "LAST_PAUSE_ENV",
    "MESSAGE_SIGNAL",
    "OP_TIMEOUT",
    "RATE_REASK_S",
    "RATE_RETRY_S",
    "RATE_TRIES",
    "RATE_WORKFLOW",
    "RECORD_TIMER_S",
    "RUN_WORKFLOW",
    "SCHEME",
    "STEP_ACTIVITY",
    "STICKY_TIMEOUT",
    "TASK_TIMEOUT",
    "UNIT_WORKFLOW",
    "ClaimCheck",
    "Target",
    "client_for",
    "forget_clients",
    "is_temporal",
    "make_url",
    "parse_url",
    "url_for",
    "versioned_queue",
]

SCHEME = "temporal://"
#: The registered names of the two workflow types and of the operation activity (stable:
#: recorded in every run's history).
RUN_WORKFLOW = "agentflow.run"
UNIT_WORKFLOW = "agentflow.unit"
STEP_ACTIVITY = "agentflow.op"
#: Inside an operation: ``UNIT|NAME``, its unit's workflow id and its name (a model call's id in
#: the run's budget ledger, temporal_budget.py: the same when the call is made again)
OPERATION: contextvars.ContextVar[str] = contextvars.ContextVar("agentflow_operation", default="")
#: The ledger workflow of a run's budget across its workers (temporal_budget.py)
BUDGET_WORKFLOW = "agentflow.budget"
#: The limiter workflow of a model's fleet-wide rate limit and concurrency (temporal_rate.py)
RATE_WORKFLOW = "agentflow.rate"
#: Seconds between two tries for a slot when the limiter could not be reached (it was
#: ending) or had not handled the request yet
RATE_RETRY_S = 0.1
#: Seconds a request's slot may stay unknown to the limiter after it asked before it asks
#: again (the limiter was ended from outside)
RATE_REASK_S = 5.0
#: Failed tries in a row after which a request gives up on its slot (and fails)
RATE_TRIES = 100
#: The activity (it does nothing) a workflow runs to complete its task now
#: (temporal_engine.commit_task).
COMMIT_ACTIVITY = "agentflow.commit"
#: The signal that carries a message (an answer) to a unit.
MESSAGE_SIGNAL = "agentflow.message"
#: The longest one recorded operation may run (a model call, a tool) before Temporal gives up.
OP_TIMEOUT = timedelta(days=1)
#: The timer that makes an operation's result part of the history before the workflow goes on.
RECORD_TIMER_S = 0.001
#: The workflow task timeout of runs and units: a worker records its local activities' results
#: at least every 80 % of it (the SDK's heartbeat of a task held open by local activities).
TASK_TIMEOUT = timedelta(seconds=4)
#: How long a workflow task waits for the worker that has the workflow cached before another
#: worker takes it (replaying its history).
STICKY_TIMEOUT = timedelta(seconds=2)
#: The memo key a run's root writes when it claims the run's end (``flowc cancel`` then finds
#: it finished; docs/durable.md "A cancel that comes late").
END_MEMO = "end"
#: A hook of the tests: with ``_AGENTFLOW_TEMPORAL_END_PAUSE=FILE`` in a worker's environment, a
#: run's root creates FILE as it comes to claim its end (in the workflow task that would
#: claim it) and waits there, blocking, until FILE is gone (at most 3 s: the task's timeout is
#: 4 s), so a test lands a cancel request in exactly that task.
END_PAUSE_ENV = "_AGENTFLOW_TEMPORAL_END_PAUSE"
#: A hook of the tests, as :data:`END_PAUSE_ENV`, in the root's last workflow task (the one
#: that completes the workflow, after its ``run_finished``): a test lands a late signal there.
LAST_PAUSE_ENV = "_AGENTFLOW_TEMPORAL_LAST_PAUSE"
#: The payload metadata encoding of a claim check.
CLAIM_ENCODING = b"agentflow/claim-check"
JSON_ENCODING = "json/agentflow"


def _temporal() -> Any:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise ConfigError(
            '[durable] engine = "temporal" needs the temporalio package: '
            "pip install 'agentflow[temporal]'"
        ) from None
    import temporalio

    return temporalio


# ---------------------------------------------------------------------------------------------
# Where the engine is: a temporal:// URL (what runs.py passes around as the database)


@dataclass(frozen=True)
class Target:
    """One Temporal service as ``[durable]`` names it."""

    address: str
    namespace: str
    task_queue: str
    tls: bool
    claims: str
    claim_limit: int
    history_events: int = 10_000
    map_batch: int = 0
    #: ``[durable] worker_concurrency``: the most operations this process runs at once (0:
    #: no cap of its own)
    worker_concurrency: int = 0


def is_temporal(url: str) -> bool:
    """True when durable ``url`` names a Temporal service (``temporal://``)."""
    return url.startswith(SCHEME)


def make_url(
    address: str,
    namespace: str,
    task_queue: str,
    tls: bool,
    claims: Path,
    claim_limit: int,
    history_events: int = 10_000,
    map_batch: int = 0,
    worker_concurrency: int = 0,
) -> str:
    """``temporal://ADDRESS/NAMESPACE?task_queue=…``: the durable "database" of a Temporal
    engine (no secret is ever part of it: the API key and the client certificate come from
    the environment when connecting)."""
    query = urlencode(
        {"task_queue": task_queue, "tls": "1" if tls else "0", "claims": str(claims),
         "claim_limit": str(claim_limit), "history_events": str(history_events),
         "map_batch": str(map_batch), "worker_concurrency": str(worker_concurrency)}
    )  # fmt: skip
    return f"{SCHEME}{address}/{quote(namespace, safe='')}?{query}"


def url_for(config: Config) -> str:
    """The ``temporal://`` URL of ``[durable] engine = "temporal"``: address (``${VAR}``
    expanded), namespace, task queue, TLS and the claim-check store."""
    d = config.durable
    claims = Path(d.claim_check_dir)
    if not claims.is_absolute():
        claims = config.base_dir() / claims
    address = os.path.expandvars(d.address)
    return make_url(
        address, d.namespace, d.task_queue, d.tls, claims, d.claim_check_bytes, d.history_events,
        d.map_batch, d.worker_concurrency or 0,
    )  # fmt: skip


def parse_url(url: str) -> Target:
    """The :class:`Target` of a ``temporal://`` URL.  Raises ConfigError for a malformed one."""
    rest = url[len(SCHEME) :]
    where, _, query = rest.partition("?")
    address, _, namespace = where.partition("/")
    params = {k: v[-1] for k, v in parse_qs(query).items()}
    if not address:
        raise ConfigError(
            f"{url}: a Temporal URL needs an address (temporal://HOST:PORT/NAMESPACE)"
        )
    try:
        limit = int(params.get("claim_limit", "1000000"))
        events = int(params.get("history_events", "10000"))
        batch = int(params.get("map_batch", "0"))
        per_worker = int(params.get("worker_concurrency", "0"))
    except ValueError:
        what = "claim_limit, history_events, map_batch or worker_concurrency"
        raise ConfigError(f"{url}: {what} is not a number") from None
    return Target(
        address=address,
        namespace=unquote(namespace) or "default",
        task_queue=params.get("task_queue", "agentflow"),
        tls=params.get("tls") == "1",
        claims=params.get("claims") or str(Path(".flowc/claims").resolve()),
        claim_limit=limit,
        history_events=events,
        map_batch=batch,
        worker_concurrency=per_worker,
    )


def versioned_queue(url: str) -> str:
    """The task queue of this agentflow version: ``TASK_QUEUE@VERSION``.  A run started by one
    version is taken only by workers of the same version (its workflow code is that version's
    interpreter), as DBOS's ``application_version`` does (docs/durable.md "Temporal")."""

    return f"{parse_url(url).task_queue}@{__version__}"


# ---------------------------------------------------------------------------------------------
# Payloads: agentflow's JSON records, and a claim check for large ones


def _converter_class() -> Any:
    from temporalio.api.common.v1 import Payload
    from temporalio.converter import (
        BinaryNullPayloadConverter,
        CompositePayloadConverter,
        EncodingPayloadConverter,
    )

    records = JsonRecords()

    class AgentflowJson(EncodingPayloadConverter):
        """Every value as agentflow's JSON record (records.py): tagged, never a pickle."""

        @property
        def encoding(self) -> str:
            return JSON_ENCODING

        def to_payload(self, value: Any) -> Any:
            data = records.serialize(value).encode("ascii")
            return Payload(metadata={"encoding": JSON_ENCODING.encode()}, data=data)

        def from_payload(self, payload: Any, type_hint: Any = None) -> Any:
            return records.deserialize(payload.data.decode("ascii"))

    class Converter(CompositePayloadConverter):
        def __init__(self) -> None:
            super().__init__(BinaryNullPayloadConverter(), AgentflowJson())

    return Converter


class ClaimCheck:
    """A ``PayloadCodec``: a payload larger than ``limit`` bytes is written to ``directory``
    (named by its SHA-256; written once, atomically) and replaced by a small payload naming it,
    so a 5 MB tool result never meets Temporal's payload limit (which would fail the workflow
    task again and again).  Every process of a run must read the same directory (a shared
    volume for a fleet on several machines)."""

    def __init__(self, directory: str | Path, limit: int):
        self.directory = Path(directory)
        self.limit = limit

    async def encode(self, payloads: Sequence[Any]) -> list[Any]:
        """Large payloads to the store, the others as they are."""
        from temporalio.api.common.v1 import Payload

        out = []
        for p in payloads:
            if p.ByteSize() <= self.limit:
                out.append(p)
                continue
            data = p.SerializeToString()
            sha = hashlib.sha256(data).hexdigest()
            path = self.directory / sha
            if not path.exists():
                self.directory.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{sha}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
            claim = json.dumps({"sha256": sha, "size": len(data)}).encode()
            out.append(Payload(metadata={"encoding": CLAIM_ENCODING}, data=claim))
        return out

    async def decode(self, payloads: Sequence[Any]) -> list[Any]:
        """Claimed payloads read back from the store (checked against their digest)."""
        from temporalio.api.common.v1 import Payload

        out = []
        for p in payloads:
            if p.metadata.get("encoding") != CLAIM_ENCODING:
                out.append(p)
                continue
            claim = json.loads(p.data)
            sha = str(claim.get("sha256", ""))
            path = self.directory / sha
            try:
                data = path.read_bytes()
            except OSError as e:
                raise RunError(
                    Code.DURABLE_REPLAY_MISMATCH,
                    f"a recorded value of {claim.get('size')} bytes is missing from the "
                    f"claim-check store {self.directory} ({e.strerror})",
                ) from None
            if hashlib.sha256(data).hexdigest() != sha:
                raise RunError(
                    Code.DURABLE_REPLAY_MISMATCH,
                    f"the claim-check file {path} does not hold the recorded value",
                )
            out.append(Payload.FromString(data))
        return out


def _codec(target: Target) -> Any:
    from temporalio.converter import PayloadCodec

    class Codec(ClaimCheck, PayloadCodec):
        pass

    return Codec(target.claims, target.claim_limit)


_CLIENTS: dict[tuple[str, int], tuple[Any, asyncio.AbstractEventLoop]] = {}


async def client_for(url: str) -> Any:
    """A connected ``temporalio.client.Client`` for ``url`` (one per URL and event loop).
    ``TEMPORAL_API_KEY`` (an API key, Temporal Cloud), ``TEMPORAL_TLS_CLIENT_CERT_PATH`` /
    ``TEMPORAL_TLS_CLIENT_KEY_PATH`` (mTLS) and ``TEMPORAL_TLS_SERVER_CA_CERT_PATH`` come from
    the environment.  Raises ConfigError when the server cannot be reached."""
    _temporal()
    from temporalio.client import Client, TLSConfig
    from temporalio.converter import DataConverter

    loop = asyncio.get_running_loop()
    key = (url, id(loop))
    found = _CLIENTS.get(key)
    if found is not None and found[1] is loop:
        return found[0]
    for stale in [k for k, (_, old) in _CLIENTS.items() if old.is_closed()]:
        del _CLIENTS[stale]  # its loop ended (another asyncio.run of this process)
    target = parse_url(url)
    api_key = os.environ.get("TEMPORAL_API_KEY") or None
    tls: Any = target.tls or api_key is not None
    cert, private = (os.environ.get(f"TEMPORAL_TLS_CLIENT_{k}_PATH") for k in ("CERT", "KEY"))
    ca = os.environ.get("TEMPORAL_TLS_SERVER_CA_CERT_PATH")
    if cert or private or ca:
        try:
            tls = TLSConfig(
                client_cert=Path(cert).read_bytes() if cert else None,
                client_private_key=Path(private).read_bytes() if private else None,
                server_root_ca_cert=Path(ca).read_bytes() if ca else None,
            )
        except OSError as e:
            raise ConfigError(f"cannot read a TLS file for Temporal: {e}") from None
    converter = DataConverter(
        payload_converter_class=_converter_class(), payload_codec=_codec(target)
    )
    try:
        client = await Client.connect(
            target.address,
            runtime=quiet_runtime(),
            namespace=target.namespace,
            api_key=api_key,
            tls=tls,
            data_converter=converter,
            connect_timeout=timedelta(seconds=10),
        )
    except Exception as e:  # noqa: BLE001 - a server that cannot be reached, in one line
        raise ConfigError(
            f"cannot reach the Temporal server at {target.address} (namespace "
            f"{target.namespace}): {str(e).strip() or type(e).__name__}"
        ) from None
    if not _CLIENTS:
        atexit.register(forget_clients)
    _CLIENTS[key] = (client, loop)
    return client


def forget_clients() -> None:
    """Drop the cached clients and collect them now: a client still alive when the interpreter
    finalizes makes the SDK's core threads call into a dying interpreter (``Fatal Python
    error: PyGILState_Release``, exit 134/139 instead of the command's own; pinned by
    tests/runtime/durable/test_durable_engines.py).  Registered with ``atexit``."""

    _CLIENTS.clear()
    gc.collect()


#: The name of the handler that writes the Temporal SDK core's log to its file.
CORE_LOG_HANDLER = "agentflow-temporal-log"
_RUNTIME: list[Any] = []


def quiet_runtime() -> Any:
    """The Temporal runtime of this process (one, made on first use), whose core's log — Rust
    warnings such as "Activity not found on completion" — goes through the ``temporalio.core``
    logger to ``.flowc/temporal.log``, never to the terminal: the SDK's default runtime writes
    it on the process's stdout, inside `flowc run --json`'s output (docs/durable.md "DBOS's own
    log")."""
    if not _RUNTIME:
        import logging

        from temporalio.runtime import (
            LogForwardingConfig,
            LoggingConfig,
            Runtime,
            TelemetryConfig,
            TelemetryFilter,
        )

        logger = logging.getLogger("temporalio.core")
        logger.propagate = False
        if not any(h.name == CORE_LOG_HANDLER for h in logger.handlers):
            logger.addHandler(log_handler(Path(".flowc") / "temporal.log", CORE_LOG_HANDLER))
        logging_config = LoggingConfig(
            filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
            forwarding=LogForwardingConfig(logger=logger),
        )
        _RUNTIME.append(Runtime(telemetry=TelemetryConfig(logging=logging_config)))
    return _RUNTIME[0]
