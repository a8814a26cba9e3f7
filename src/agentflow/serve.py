"""``flowc serve --mcp [DIR]``: the programs of a directory as the tools of an MCP server.

Every ``.flow`` program and plan file (``*.plan.yaml``, ``*.plan.yml``, ``*.plan.json``) in
``DIR`` (not its subdirectories) becomes one MCP tool, named like the plan (``flow NAME`` or the
file's stem):

* input schema — the program's ``input`` type as JSON Schema (an input that is not an object is
  passed as the one argument ``input``); output schema — the output type's (a result that is not
  an object comes back as ``{"result": …}``, as MCP's structured content must be an object);
  description — the program's doc comment / ``flow`` header description (a plan's
  ``description``).  Plan files have no declared output type: no output schema.
* A call runs the program (:func:`agentflow.api.run`, the directory's ``flow.toml`` or the one
  given) and answers with its output as text and structured content; a run that fails is a tool
  error whose text is the run's error message.
* Each ``ask`` step of the run becomes an elicitation request to the MCP client (the client is the
  run's interlocutor): the question, a form of one field ``answer`` typed from the ask's
  ``expect`` type (its choices as an enum); a declined or cancelled form, or a client without
  elicitation, is an unanswered question (the ask's ``when_unanswered`` decides).
* When the client asks for progress (``_meta.progressToken``), every finished top-level step is
  one progress notification (``progress`` of ``total`` steps).
* A client's cancellation cancels the run (its steps unwind as on Ctrl-C).
* With ``durable=True`` (``flowc serve --mcp --durable``) each call is a durable run
  (docs/durable.md) in ``[durable] database``, whose id the client may choose with the request's
  ``_meta`` key ``io.agentflow/idempotency-key`` (:data:`KEY_META`): a server that died
  mid-run (even ``kill -9``) resumes its runs when it starts again (finished steps are not
  repeated), and a client that calls the tool again with the same key and arguments gets the
  run's result — the finished one's at once, an unfinished one's when it ends.  Every call
  waiting for the run gets its progress from the moment it came (not replayed).  A question
  (``ask``) the run waits on is asked (again) as an elicitation request of one waiting call
  at a time — the earliest one whose client can elicit — and of the next when that call ends
  unanswered; an accepted answer is delivered to the run as ``flowc answer`` would.
  The result's ``_meta`` names the run (``io.agentflow/run``, :data:`RUN_META`).

Transports: stdio (:func:`serve_stdio`) and streamable HTTP (:func:`serve_http`, endpoint
``/mcp``, DNS-rebinding protection on loopback hosts), both through the SDK's low-level server.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

from agentflow import api_run
from agentflow.core import version as core_version
from agentflow.core.redaction import redact, redact_data
from agentflow.core.text import clean_json, finite_dumps, visible
from agentflow.errors import ConfigError, FlowError, InputError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import dbos_engine, runs, temporal_runs
from agentflow.runtime.durable.dbos_launch import recorded_input
from agentflow.runtime.durable.records import held_secret
from agentflow.runtime.durable.run_info import answer_command
from agentflow.runtime.durable.runs import database_for, open_database, run_lock, safe_url
from agentflow.runtime.durable.spec import close_context, context_from_spec, untaken_message
from agentflow.runtime.executor import NO_ANSWER, Hooks
from agentflow.runtime.extract import json_number_problem
from agentflow.runtime.hooks import check_answer
from agentflow.runtime.interrupt import LoopThread, off_loop
from agentflow.runtime.models.test_model import parse_model_option
from agentflow.runtime.result import RunResult
from agentflow.serve_asks import _connection, _Elicitor, ask_form, elicit_answer
from agentflow.serve_desk import _RunDesk, _Waiter
from agentflow.serve_flows import PLAN_SUFFIXES, ServedFlow, discover
from agentflow.serve_wire import SURROGATE_ESCAPE, CheckedLines, made_whole, message_problem

#: The ``_meta`` key of a ``tools/call`` request that names a durable run: the same key (and
#: the same arguments) on a later call of the same tool reaches the same run.
KEY_META = "io.agentflow/idempotency-key"
#: The ``_meta`` key of a durable call's result: the run's id (``flowc runs show ID``).
RUN_META = "io.agentflow/run"
#: What an idempotency key may be: 1–100 letters, digits and ``._~-``.
KEY_PATTERN = re.compile(r"[A-Za-z0-9._~-]{1,100}")
#: Seconds between two looks for the questions a durable run waits on.
QUESTION_POLL_S = 0.1


# ----------------------------------------------------------------------------- the MCP server


def _text(value: Any) -> str:
    return value if isinstance(value, str) else finite_dumps(value, ensure_ascii=False, indent=1)


class McpFlowServer:
    """The MCP server of :func:`discover`'s tools.

    ``directory``: the served directory; ``config``: a ``flow.toml`` path or Config (default:
    the one found from ``directory``); ``workspace``: the runs' workspace root (default
    ``directory``); ``durable``: run each call as a durable run in ``database`` (default
    ``[durable] database``; see the module doc); ``model``: ``"test[+tools][:SEED]"`` answers
    every agent with the built-in test model (as :func:`agentflow.run`'s ``model``).  Raises
    ConfigError for a broken configuration or database URL.
    """

    def __init__(
        self,
        directory: Path,
        *,
        config: Any = None,
        workspace: Path | None = None,
        durable: bool = False,
        database: str | None = None,
        model: str | None = None,
    ) -> None:
        self.directory = directory
        if model is not None:  # refused at start-up, not at each call
            try:
                parse_model_option(model, "model")
            except ValueError as e:
                raise ConfigError(str(e)) from None
        self.model = model
        self.served = discover(directory)
        self.config = config if config is not None else load_config(near=directory)
        if not hasattr(self.config, "mcp"):
            self.config = load_config(config)
        self.workspace = workspace or directory
        self.database = database
        self.url: str | None = None
        if durable:
            self.url = database_for(self.config, database)
        #: the Temporal backend of served runs (temporal_runs.py), None on DBOS: a Temporal
        #: server is a worker of the task queue while it serves (docs/durable.md "Temporal")
        self._temporal: Any = None
        if self.url is not None and self.url.startswith("temporal://"):
            self._temporal = temporal_runs
        self._worker = contextlib.AsyncExitStack()
        #: Temporal: the loop this server's worker and its runs run on (open_durable)
        self._engine: LoopThread | None = None
        #: the durable engine's executor id: stable across restarts of a server of this
        #: directory, so a restarted server recovers the runs its predecessor left unfinished
        digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:12]
        self.executor_id = f"serve:{directory.resolve().name}-{digest}"
        self._locks = contextlib.ExitStack()
        #: run id -> its lock, held while this server lives (:meth:`_hold`)
        self._held: dict[str, contextlib.ExitStack] = {}
        self._opened = False
        #: (connection, request id) of the calls a client cancelled (``notifications/cancelled``)
        self._cancelled: set[tuple[str | None, Any]] = set()
        #: run id -> (input, the future of its result) of the durable runs calls wait for now
        self._inflight: dict[str, tuple[Any, asyncio.Future[Any]]] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        #: run id -> why this server, restarted, could not take up a run it had left (open_durable)
        self._untaken: dict[str, str] = {}
        #: run id -> what the calls waiting on that run share (progress, who is asked)
        self._desks: dict[str, _RunDesk] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.server = self._build()
        self.server.middleware.append(self._note_cancellation)
        self.server.middleware.append(_redact_replies)

    async def open_durable(self) -> None:
        """Start the durable engine (``durable`` servers; idempotent): the runs an earlier
        server of this directory left unfinished resume now, in the background, and this
        process holds their locks (``flowc runs`` shows them running, ``flowc resume`` leaves
        them alone)."""
        if self.url is None or self._opened:
            return
        if self._temporal is not None:  # Temporal resumes a left run once this worker polls
            self._loop = asyncio.get_running_loop()
            # the worker, and the runs this server starts, on a loop of their own: the SDK
            # runs workflow code on its worker's loop (docs/decisions.md "Temporal-served calls
            # off the server's loop"), which must not be the one reading the client's messages
            engine = self._engine = LoopThread(name="flowc-serve-temporal")
            held = contextlib.AsyncExitStack()
            served = self._temporal.served(
                self.url, f"{self.executor_id}@{os.getpid()}", [_RecoveredRuns(self)]
            )
            try:
                await engine.run(lambda: held.enter_async_context(served))
            except BaseException:
                engine.close()
                raise

            async def stop() -> None:
                try:
                    await engine.run(held.aclose)
                finally:
                    engine.close()
                    self._engine = None

            self._worker.push_async_callback(stop)
            self._opened = True
            return

        self._loop = asyncio.get_running_loop()
        # the runs this process resumes (at start-up, or a dead server's a call finds) report
        # their steps to the calls that wait for them, as the runs it starts do
        dbos_engine.set_process_sinks([_RecoveredRuns(self)])
        open_database(self.url, executor_id=self.executor_id, queues=[])
        self._opened = True
        recovered = await dbos_engine.dbos_with_workflows().DBOS.list_workflows_async(
            status=["PENDING", "ENQUEUED"],
            name=dbos_engine.RUN_WORKFLOW,
            executor_id=self.executor_id,
        )
        for w in recovered:
            self._hold(w.workflow_id)
        for w in recovered:
            try:  # what this process cannot give a run (a key, a [tools] module) leaves it
                # pending, not ended (liveness.taken_up), and not held: `flowc runs` says
                # `stopped`, and `flowc resume` takes it up once it is put right
                await _buildable(w.workflow_id)
            except FlowError as exc:
                said = self._untaken[w.workflow_id] = untaken_message(w.workflow_id, exc)
                print(f"flowc serve: {visible(said, lines=True)}", file=sys.stderr)
                lock = self._held.pop(w.workflow_id, None)
                if lock is not None:
                    lock.close()

    def _hold(self, run_id: str) -> None:
        """Hold the lock of run ``run_id`` while this server lives (none when another process
        holds it)."""
        assert self.url is not None
        lock = contextlib.ExitStack()
        with contextlib.suppress(InputError):
            lock.enter_context(run_lock(self.url, run_id))
        self._held[run_id] = self._locks.enter_context(lock)

    def _build(self) -> Any:
        from mcp.server.lowlevel import Server

        return Server(
            "flowc",
            version=core_version.__version__,
            instructions=f"Workflows of {self.directory.resolve().name}/, run by flowc.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp.types import ListToolsResult, Tool

        tools = [
            Tool(
                name=f.name,
                description=f.description,
                input_schema=f.input_schema,
                output_schema=f.output_schema,
            )
            for f in self.served.flows.values()
        ]
        return ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp.types import CallToolResult, TextContent

        flow = self.served.flows.get(params.name)
        if flow is None:
            names = ", ".join(self.served.flows) or "none"
            return CallToolResult(
                content=[TextContent(text=f"unknown tool {params.name!r} (tools: {names})")],
                is_error=True,
            )
        args = clean_json(dict(params.arguments or {}))  # a lone surrogate becomes U+FFFD
        run_input = args.get("input") if flow.wrap_input else args
        number = json_number_problem(run_input)  # NaN, Infinity, an int past 64 bits
        if number is not None:  # refused as `--input` refuses them, before anything is stored
            return _error_result(number)
        if self.url is not None:
            return await self._call_durable(ctx, flow, run_input)
        desk = _RunDesk(asyncio.get_running_loop(), flow.steps)
        progress = desk.join(ctx)
        try:
            hooks = Hooks(interlocutor=_Elicitor(ctx))
            result = await self._run(flow, run_input, hooks=hooks, sinks=[desk.sink()])
        except FlowError as exc:  # bad input, a tool that does not resolve, no model
            await progress.flush()
            return CallToolResult(content=[TextContent(text=str(exc))], is_error=True)
        await progress.flush()
        return _tool_result(flow, result)

    def _run(self, flow: ServedFlow, run_input: Any, off: bool = True, **options: Any) -> Any:
        """A call's run (:func:`agentflow.api.run`) on a loop of its own (:func:`off_loop`, unless
        not ``off``): a long evaluation holds no other call up, a cancel ends it at a checkpoint."""

        def start() -> Any:
            return api_run.run(
                flow.plan,
                run_input,
                config=self.config,
                workspace=self.workspace,
                shape_cache=False,
                model=self.model,
                **options,
            )

        if self._engine is not None and options.get("durable"):
            return self._engine.run(start)  # Temporal: where this server's worker runs
        return off_loop(start, name=f"flowc-serve-{flow.name}") if off else start()

    async def _call_durable(self, ctx: Any, flow: ServedFlow, run_input: Any) -> Any:
        """A call as a durable run: a new one, or the run an earlier call with the same
        idempotency key started (its result, or the wait for it)."""
        import anyio

        assert self.url is not None
        url = self.url
        await self.open_durable()
        meta = getattr(ctx, "meta", None) or {}
        key = meta.get(KEY_META)
        if key is not None and not (isinstance(key, str) and KEY_PATTERN.fullmatch(key)):
            return _error_result(
                f"_meta {KEY_META}: {key!r} is not an idempotency key "
                "(1-100 letters, digits and ._~-)"
            )
        held = held_secret(key) if key is not None else None
        if held is not None:  # it would be the run's id: stored, and shown as *** (durable.md)
            return _error_result(
                f"_meta {KEY_META}: the idempotency key holds {held}; it becomes the durable "
                "run's id, which is stored and shown, and a secret never is: use another key"
            )
        run_id = f"mcp-{flow.name}-{key}" if key is not None else runs.new_run_id()
        other_arguments = _error_result(
            f"idempotency key {key!r} was used for a call of {flow.name} with other "
            "arguments: use a new key for a new call"
        )
        waiter: asyncio.Future[Any]
        lock = self._starting.setdefault(run_id, asyncio.Lock())
        async with lock:  # one lookup-and-start at a time per run: one run per key
            inflight = self._inflight.get(run_id)
            earlier = (
                await self._temporal.served_run(url, run_id)
                if inflight is None and self._temporal is not None
                else None
            )
            found = (
                await dbos_engine.dbos_with_workflows().DBOS.list_workflows_async(
                    workflow_ids=[run_id], load_input=True
                )
                if inflight is None and self._temporal is None
                else None
            )
            if inflight is not None:  # a call of this process runs it (maybe not recorded yet)
                if inflight[0] != run_input:
                    return other_arguments
                waiter = inflight[1]
            elif earlier is not None:  # Temporal: any worker (this one too) goes on with it
                if earlier[0] != run_input:
                    earlier[1].close()
                    return other_arguments
                waiter = asyncio.ensure_future(earlier[1])
                self._track(run_id, run_input, waiter)
            elif run_id in self._untaken:  # left pending at start-up: never waited for here
                return _error_result(self._untaken[run_id])
            elif found:
                dbos = dbos_engine.dbos_with_workflows()
                status = found[0]
                spec = status.input["args"][0] if status.input and status.input.get("args") else {}
                if status.name != dbos_engine.RUN_WORKFLOW or spec.get("input") != run_input:
                    return other_arguments
                if (
                    status.status in ("PENDING", "ENQUEUED")
                    and status.executor_id != self.executor_id
                    and not runs.run_alive(url, run_id)
                ):  # left by a process of another executor that died: resume it (alone) here
                    try:  # what this process cannot give the run (a key, a [tools] module) is
                        # refused before the run is taken up: it stays `stopped` (execution.py)
                        await dbos_engine.runtime_for(run_id, ahead=True)
                    except FlowError as exc:
                        return _error_result(str(exc))
                    self._hold(run_id)
                    await asyncio.to_thread(dbos_engine.recover_run, run_id)
                handle = await dbos.DBOS.retrieve_workflow_async(run_id)

                async def outcome() -> Any:
                    return runs.result_of(await runs.await_outcome(handle), RunResult)

                waiter = asyncio.ensure_future(outcome())
                self._track(run_id, run_input, waiter)
            else:
                options: dict[str, Any] = {"durable": True, "run_id": run_id}
                options["database"] = self.database
                sinks = [self._desk(run_id).sink()]
                waiter = asyncio.ensure_future(self._run(flow, run_input, sinks=sinks, **options))
                self._track(run_id, run_input, waiter)
        desk = self._desk(run_id)
        desk.total = flow.steps
        progress = desk.join(ctx)
        if desk.relay is None or desk.relay.done():
            desk.relay = asyncio.ensure_future(self._relay_questions(desk, url, run_id, waiter))
        try:
            result = await asyncio.shield(waiter)
        except FlowError as exc:  # bad input, a tool that does not resolve, no model
            return _error_result(str(exc))
        except BaseException:
            # the call ended before the run: a client's cancellation cancels the run too; a
            # lost connection or a stopping server leaves it running (the same key finds it)
            with anyio.CancelScope(shield=True):
                if await self._cancelled_by_client(ctx):
                    with contextlib.suppress(Exception):
                        await runs.cancel(url, run_id)
            raise  # the run goes on: self._inflight holds its waiter until it ends
        finally:
            desk.leave(progress)
            if not desk.waiters:
                if desk.relay is not None:  # a call that comes later starts a new one
                    desk.relay.cancel()
                    desk.relay = None
                if run_id not in self._inflight:
                    self._desks.pop(run_id, None)
            await progress.flush()
        answer = _tool_result(flow, result)
        answer.meta = {RUN_META: run_id}
        return answer

    def _track(self, run_id: str, run_input: Any, waiter: asyncio.Future[Any]) -> None:
        """Remember that ``waiter`` waits for run ``run_id`` (started with ``run_input``)
        until it ends: a second call with the same key waits for the same run."""
        self._inflight[run_id] = (run_input, waiter)

        def ended(_f: Any) -> None:
            self._inflight.pop(run_id, None)
            desk = self._desks.get(run_id)
            if desk is not None and not desk.waiters:
                self._desks.pop(run_id, None)

        waiter.add_done_callback(ended)

    def _desk(self, run_id: str) -> _RunDesk:
        """What the calls waiting on run ``run_id`` share (made on first use)."""
        desk = self._desks.get(run_id)
        if desk is None:
            desk = self._desks[run_id] = _RunDesk(self._loop or asyncio.get_running_loop())
        return desk

    async def _note_cancellation(self, ctx: Any, call_next: Any) -> Any:
        """Server middleware: remember the requests a client cancelled
        (``notifications/cancelled``; the SDK interrupts the handler first, then passes the
        notification on, and gives a low-level handler no other way to tell)."""
        if ctx.method == "notifications/cancelled" and isinstance(ctx.params, dict):
            rid = ctx.params.get("requestId")
            if rid is not None:
                self._cancelled.add((_connection(ctx), rid))
        return await call_next(ctx)

    async def _cancelled_by_client(self, ctx: Any, wait: float = 1.0) -> bool:
        """True when the client cancelled this call (its notification may come a moment
        after the interruption: waits up to ``wait`` seconds for it)."""
        key = (_connection(ctx), ctx.request_id)
        deadline = asyncio.get_running_loop().time() + wait
        while key not in self._cancelled:
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        self._cancelled.discard(key)
        return True

    async def _relay_questions(
        self, desk: _RunDesk, url: str, run_id: str, done: asyncio.Future[Any]
    ) -> None:
        """Ask each question run ``run_id`` waits on as an elicitation request, until the run
        ends or no call waits for it: one call at a time is asked — the earliest call still
        waiting whose client can elicit (the one that started the run, while it waits) — and
        when that call ends before the client answers, the question goes to the next such call
        (or waits for one).  An accepted answer goes to the run, a declined or cancelled one
        leaves the question unanswered (its ``when_unanswered`` decides).  With no call that
        can elicit, the questions wait (``flowc answer``, or their timeout)."""
        mine: set[asyncio.Task[None]] = set()
        try:
            while not done.done() and desk.waiters:
                for waiter in desk.waiters:
                    waiter.gone = waiter.gone or self._call_gone(waiter.ctx)
                pending = await runs.pending_questions(url, run_id)
                paths = {q.path for q in pending}
                for path, (asked, task) in list(desk.asking.items()):
                    if task.done():  # its reply settled the question, or it failed
                        desk.settle(asked, path)(task)
                        del desk.asking[path]
                    elif path not in paths or asked.gone or asked not in desk.waiters:
                        # answered elsewhere (`flowc answer`), or the asked call ended
                        task.cancel()
                        del desk.asking[path]
                for question in pending:
                    if question.path in desk.settled or question.path in desk.asking:
                        continue
                    asker = desk.asker()
                    if asker is None:
                        break
                    task = asyncio.ensure_future(self._ask(asker, url, run_id, question))
                    desk.asking[question.path] = (asker, task)
                    mine.add(task)
                    task.add_done_callback(desk.settle(asker, question.path))
                await asyncio.sleep(QUESTION_POLL_S)
        finally:  # the elicitations this relay sent (a later relay of the run sends its own)
            for path, (_asked, task) in list(desk.asking.items()):
                if task in mine:
                    task.cancel()
                    del desk.asking[path]

    def _call_gone(self, ctx: Any) -> bool:
        """True when the client of a call over streamable HTTP is no longer there to answer:
        its session ended, or the call's response stream closed (the client dropped the
        connection, e.g. its process died).  The SDK does not interrupt the call's handler
        then, so a call waiting on a durable run would go on waiting, and be asked, without a
        client.  Never on stdio (one connection: the server ends with it)."""
        session_id = _connection(ctx)
        manager = getattr(self.server, "_session_manager", None)
        if session_id is None or manager is None:
            return False
        # mcp is pinned <2.4 (pyproject): its transports by session id, and the response
        # streams of the requests in flight by request id
        transport = manager._server_instances.get(session_id)
        if transport is None or transport.is_terminated:
            return True
        return str(ctx.request_id) not in transport._request_streams

    async def _ask(self, waiter: _Waiter, url: str, run_id: str, question: Any) -> None:
        ctx = waiter.ctx
        answer, problem = await elicit_answer(
            ctx.session, question.question, ask_form(question), ctx.request_id,
            lambda value: check_answer(value, question.schema, question.choices),
        )  # fmt: skip
        if problem is not None:
            # accepted forms that never matched the requested schema: no answer is made up
            # (the question waits for `flowc answer` or its timeout), and the client is told
            label = question.label or ""
            name = label.rsplit("›", 1)[-1].split(" = ", 1)[0].strip() if " = " in label else ""
            with contextlib.suppress(Exception):
                await ctx.session.send_log_message(
                    "warning",
                    redact(
                        f"answer to `{question.question}` not accepted: {problem}; the question "
                        f"waits: {answer_command(run_id, name or question.path)}"
                    ),
                    related_request_id=ctx.request_id,
                )
            return
        if answer is not NO_ANSWER:
            with contextlib.suppress(InputError):  # not accepted: unanswered, as below
                await runs.answer(url, run_id, question.path, answer)
                return
        with contextlib.suppress(InputError):
            await runs.unanswered(url, run_id, question.path)

    # ------------------------------------------------------------------ transports

    async def serve_stdio(self) -> None:
        """Serve over the process's stdin/stdout until the client closes them.

        Each line is checked before the SDK reads it (:func:`message_problem`): a line that is
        not JSON is answered with a JSON-RPC error -32700, one that is no JSON-RPC message or
        a request whose ``id`` is neither a string nor an integer with -32600 (the SDK would
        drop the first two with a log line and take the last for a notification: no reply).
        As the SDK does, fd 0 is pointed at the null device while serving (tools and their
        children read EOF, never the wire)."""
        import anyio
        from mcp.server.stdio import stdio_server
        from mcp.shared.message import SessionMessage

        await self.open_durable()
        rejected_send, rejected = anyio.create_memory_object_stream[Any](16)
        with _stdin_claimed() as wire:
            lines = CheckedLines(anyio.wrap_file(wire), rejected_send)
            async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]

                async def answer_rejected() -> None:
                    async with rejected:
                        async for error in rejected:
                            await write.send(SessionMessage(error))

                try:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(answer_rejected)
                        await self.server.run(
                            read, write, self.server.create_initialization_options()
                        )
                        tg.cancel_scope.cancel()
                finally:
                    await self.close_durable()

    async def serve_http(
        self, host: str = "127.0.0.1", port: int = 8000, sock: socket.socket | None = None
    ) -> None:
        """Serve over streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled (on ``sock``
        when given: a socket bound already, :func:`listening`); a request whose ``id`` is
        neither a string nor an integer is answered HTTP 400 with a JSON-RPC error -32600
        (:class:`_RefuseBadIds`; the SDK would take it for a notification and answer 202 with
        no reply)."""
        import uvicorn

        await self.open_durable()
        app = _RefuseBadIds(self.server.streamable_http_app(host=host))
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        try:
            await uvicorn.Server(config).serve(sockets=[sock] if sock is not None else None)
        finally:
            await self.close_durable()

    async def close_durable(self) -> None:
        """Stop being a worker of the durable engine (Temporal; nothing on DBOS): the runs
        this server ran go on in the engine, any worker (a new server) takes them up."""
        await self._worker.aclose()
        self._opened = False


async def _buildable(run_id: str) -> None:
    """Build the context of run ``run_id`` from its recorded input as its root, recovered here,
    does (on this server's loop, sharing nothing with that build on the engine's), and close it again.  Raises what the
    build raises — a ConfigError for a key unset or a ``[tools]`` module gone, a PlanLoadError."""
    spec = await recorded_input(run_id)
    plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    await close_context(context_from_spec(spec, plan, []))


@contextlib.contextmanager
def _stdin_claimed() -> Any:
    """The wire (a UTF-8 text reader of a private duplicate of fd 0) while fd 0 points at the
    null device, as the SDK's own stdio transport does when it opens stdin itself; fd 0 is
    restored on exit. The duplicate is never closed: a worker thread may still block on it."""
    import io
    import os

    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        raw = os.fdopen(private, "rb", closefd=False)
        yield io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)


class _RefuseBadIds:
    """ASGI middleware in front of the SDK's streamable HTTP app: a POST whose body
    :func:`message_problem` refuses for its ids gets HTTP 400 and the JSON-RPC error -32600
    (bodies that are not JSON are left to the SDK, which answers -32700 itself)."""

    #: bodies larger than this are passed on unread (the SDK refuses them by size)
    MAX_BODY = 4 * 1024 * 1024

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        first: list[Any] = []
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                first.append(message)
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if not message.get("more_body", False) or size > self.MAX_BODY:
                break
        body = b"".join(chunks)
        more = bool(chunks) and size > self.MAX_BODY
        problem = None if first or more else message_problem(body)
        if problem is not None and problem.error.code != -32700:
            payload = problem.model_dump_json(by_alias=True).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(payload)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": payload})
            return
        if not (first or more) and SURROGATE_ESCAPE.search(body.decode("utf-8", "replace")):
            body = made_whole(body.decode("utf-8", "replace")).encode("utf-8")
        replay = [{"type": "http.request", "body": body, "more_body": more}, *first]

        async def replayed() -> Any:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)


async def _redact_replies(ctx: Any, call_next: Any) -> Any:
    """Server middleware: every reply of the server — a tool's result (text and structured
    content), a tool error, any request's result or JSON-RPC error — passes the redaction
    layer (:mod:`agentflow.core.redaction`), as every other output of flowc does
    (docs/mcp.md "Server").  The requests the server sends itself (progress,
    elicitation) are redacted where they are made."""
    from mcp.shared.exceptions import MCPError
    from pydantic import BaseModel, ValidationError

    try:
        result = await call_next(ctx)
    except MCPError as e:
        error = e.error
        message, data = redact(error.message), redact_data(error.data)
        if message is error.message and data is error.data:
            raise
        raise MCPError(error.code, message, data) from None
    except (ValidationError, asyncio.CancelledError):
        raise
    except Exception as e:  # noqa: BLE001 - the SDK would send str(e) as it is
        text = str(e)
        if redact(text) == text:
            raise
        raise MCPError(0, redact(text)) from None
    if isinstance(result, BaseModel):
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        cleaned = redact_data(dumped)
        return result if cleaned is dumped else cleaned
    return redact_data(result) if isinstance(result, dict) else result


def _error_result(text: str) -> Any:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def _tool_result(flow: ServedFlow, result: Any) -> Any:
    """The ``CallToolResult`` of a finished run: its output as text (and structured content
    when the program declares an output type), or a tool error naming the run's error."""
    from mcp.types import CallToolResult, TextContent

    if result.status in ("ok", "exited"):
        output = result.output
        structured = None
        if flow.output_schema is not None:
            structured = {"result": output} if flow.wrap_output else output
        return CallToolResult(
            content=[TextContent(text=_text(output))], structured_content=structured
        )
    error = result.error or {}
    # the failed step as the .flow names it, its step path after
    label, path = error.get("label"), error.get("step_path")
    where = f" (in {label}, step {path})" if label and path else ""
    where = where or (f" (step {path})" if path else "")
    return _error_result(f"{error.get('code', result.status)}: {error.get('message')}{where}")


class _RecoveredRuns:
    """The process sink of a durable server: each run the engine resumes in this process
    reports to its :class:`_RunDesk` (found by the run's workflow id)."""

    def __init__(self, server: McpFlowServer) -> None:
        self.server = server

    def for_run(self) -> Any:
        if self.server._temporal is not None:
            run_id = self.server._temporal.current_run()
        else:
            run_id = str(dbos_engine.dbos_with_workflows().DBOS.workflow_id or "").split("/", 1)[0]
        desks = self.server._desks
        desk = desks.get(run_id)
        if desk is None:
            assert self.server._loop is not None
            desk = desks[run_id] = _RunDesk(self.server._loop)
        return desk.sink()

    def handle(self, event: Any) -> None:
        """Nothing: the per-run sinks of :meth:`for_run` receive the events."""


def serve(
    directory: Path,
    *,
    http: int | None = None,
    host: str = "127.0.0.1",
    config: Any = None,
    workspace: Path | None = None,
    durable: bool = False,
    database: str | None = None,
    model: str | None = None,
) -> None:
    """Serve ``directory``'s programs (stdio, or streamable HTTP on ``http``); reports the
    tools and the files left out on stderr; ``durable``: each call a durable run (see the
    module doc); ``model``: as :class:`McpFlowServer`'s.  Raises ConfigError when it cannot listen
    on ``http`` (:func:`listening`: before it is announced) and for a broken
    configuration or database."""
    server = McpFlowServer(
        directory,
        config=config,
        workspace=workspace,
        durable=durable,
        database=database,
        model=model,
    )
    for problem in server.served.problems:
        print(f"flowc serve: {visible(str(problem), lines=True)}", file=sys.stderr)
    names = ", ".join(server.served.flows) or "none"
    # bound before it is announced: a port another process holds is an OSError here, and
    # `--http 0` announces the port it got
    try:
        sock = listening(host, http) if http is not None else None
    except OSError as e:
        why = str(e.strerror or e)
        if e.errno == errno.EADDRINUSE:
            why = f"another process listens there ({why}): stop it, or give another port"
            why += " (--http 0: any free one)"
        raise ConfigError(f"cannot listen on {host} port {http}: {why}") from None
    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{sock.getsockname()[1]}/mcp" if sock is not None else "stdio"
    print(f"flowc serve: {len(server.served.flows)} tool(s) on {where}: {names}", file=sys.stderr)
    if not server.served.flows:
        nested = sorted(
            str(p.relative_to(directory))
            for p in Path(directory).glob("*/*")
            if (p.suffix == ".flow" or p.name.endswith(PLAN_SUFFIXES)) and os.path.isfile(p)
        )
        if nested:  # the flows are a level down: serve looks in DIR itself only
            shown = ", ".join(nested[:3]) + (" …" if len(nested) > 3 else "")
            print(
                f"flowc serve: hint: the files of {directory} itself are served, not those of its "
                f"sub-directories ({shown}): give the directory that holds them",
                file=sys.stderr,
            )
    if server.url is not None:
        print(f"flowc serve: durable runs in {safe_url(server.url)}", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        if sock is None:
            asyncio.run(server.serve_stdio())
        else:
            with sock:
                asyncio.run(server.serve_http(host, sock.getsockname()[1], sock))


def listening(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (``0``: a free port), IPv6 for an address with a
    ``:``, not listening yet: uvicorn listens once the server is ready (a durable server has
    resumed its runs), so a client that connects first is refused rather than kept waiting.
    Raises OSError when it cannot be bound (the port held, no such name)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


__all__ = ["KEY_META", "RUN_META", "McpFlowServer", "serve"]
