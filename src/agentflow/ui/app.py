"""``flowc ui``: the web console's server (docs/reference/ui.md): a Starlette application over
one durable runs database, served by uvicorn (both dependencies of the ``mcp`` SDK).

Routes:

==========================  ==============================================================
``GET /``                   the runs list (``?status=``, ``?flow=`` filter it)
``GET /runs/{id}``          a run's page
``POST /runs/{id}/answer``  answer a waiting question (fields ``step``, ``value``)
``POST /runs/{id}/cancel``  cancel the run
``POST /runs/{id}/resume``  continue a stopped run, in a ``flowc resume`` process of its own
``POST /runs/{id}/redrive`` run a failed run again from its failed steps (``flowc redrive``)
``POST /runs/{id}/reuse``   run the run's file, as edited since, again with ``--reuse`` of it
``GET /events[?run=id]``    Server-Sent Events: ``change`` with a version each time what the
                            page shows changes (polled from the database every second)
==========================  ==============================================================

Safety: bound to loopback by default, and then a request must name a loopback host (no DNS
rebinding); bound to another address it needs the token printed at start (``?token=``
once, then a cookie).  Every ``POST`` carries the page's form token (no cross-site request
forgery).  Everything reads and acts through :mod:`agentflow.api`; a run resumed or redriven
from the page runs in a ``flowc`` process of its own, which outlives the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow import api_compile, api_durable
from agentflow.compiler.render import render_text
from agentflow.errors import FlowError, InputError
from agentflow.runtime.durable.dbos_engine import shutdown, sqlite_path
from agentflow.runtime.durable.runs import safe_url as safe
from agentflow.ui import pages

__all__ = ["Console", "build_app", "is_loopback", "serve"]

TOKEN_COOKIE = "flowc_ui_token"
#: how long one live-update stream lasts before the page's browser opens another (seconds):
#: no connection outlives a page that failed to close it by more than this
STREAM_S = 30.0
#: how soon a browser reconnects a stream that ended (milliseconds)
RETRY_MS = 500


def host_of(header: str) -> str:
    """The host name of a ``Host`` header, without its port and lower-cased (host names are
    case-insensitive): ``"[::1]:8080"`` → ``"[::1]"``, ``"[::1]"`` → ``"[::1]"``,
    ``"LOCALHOST:80"`` → ``"localhost"`` (docs/reference/ui.md "Safety")."""
    header = header.strip().lower()
    if header.startswith("["):  # an IPv6 literal: its port, if any, follows the bracket
        end = header.find("]")
        return header[: end + 1] if end >= 0 else ""  # no closing bracket: no host
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.1``, ``::1`` …); ``host`` as
    :func:`host_of` gives it."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Console:
    """The console's state: the database ``url``, the ``token`` a non-loopback bind requires
    (None on loopback), the ``csrf`` token of its forms, ``poll`` (seconds between database
    reads of the live updates), the ``flowc`` processes it started (resume, redrive)."""

    url: str
    token: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    poll: float = 1.0
    limit: int = 50
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)
    log_dir: Path | None = None
    #: set when the server stops: the live-update streams end at once
    stopping: asyncio.Event | None = None

    def stop_event(self) -> asyncio.Event:
        """:attr:`stopping`, made on first use (inside the server's event loop)."""
        if self.stopping is None:
            self.stopping = asyncio.Event()
        return self.stopping

    def spawn(self, *args: str, name: str | None = None) -> None:
        """Start ``flowc ARGS`` on this database, in a session of its own (it outlives the
        console); its output goes to a log file in :attr:`log_dir` named after ``name``
        (default: the command and its first argument)."""
        self.children = [c for c in self.children if c.poll() is None]  # reap the ended
        log_dir = self.log_dir or Path.cwd()
        log_dir.mkdir(parents=True, exist_ok=True)
        stem = (name or f"{args[0]}-{args[1]}").replace("/", "_")
        log = log_dir / f"ui-{stem}-{int(time.time())}.log"
        with log.open("ab") as out:
            self.children.append(
                subprocess.Popen(
                    [sys.executable, "-m", "agentflow", *args, "--database", self.url],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            )


def build_app(console: Console) -> Any:
    """The Starlette application of ``console`` (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import (
        HTMLResponse,
        PlainTextResponse,
        RedirectResponse,
        Response,
        StreamingResponse,
    )
    from starlette.routing import Route

    def refused(request: Request) -> Response | None:
        """Why ``request`` may not be served (a response), or None."""
        host = host_of(request.headers.get("host") or "")
        if console.token is None:
            if not is_loopback(host):  # DNS rebinding: a page elsewhere naming our address
                return PlainTextResponse("flowc ui answers loopback names only", 421)
            return None
        given = request.cookies.get(TOKEN_COOKIE) or request.query_params.get("token") or ""
        if not hmac.compare_digest(given.encode(), console.token.encode()):
            return PlainTextResponse(
                "flowc ui: open the address printed when it started (it carries the token)", 401
            )
        return None

    async def checked_form(request: Request) -> tuple[dict[str, str], Response | None]:
        form = await request.form()
        fields = {k: str(v) for k, v in form.items()}
        if not hmac.compare_digest(fields.get("csrf", "").encode(), console.csrf.encode()):
            return fields, PlainTextResponse("flowc ui: this form is stale; reload the page", 403)
        return fields, None

    def html(text: str, status: int = 200, request: Request | None = None) -> Response:
        response = HTMLResponse(text, status_code=status)
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
            "img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if console.token is not None and request is not None:
            if request.query_params.get("token") == console.token:
                response.set_cookie(TOKEN_COOKIE, console.token, httponly=True, samesite="strict")
        return response

    def error_page(message: str, status: int) -> Response:
        body = f'<main><div class="error-box" role="alert">{pages._e(message)}</div></main>'
        return html(pages.page("flowc ui", body), status)

    async def runs_version() -> str:
        runs = await api_durable.list_durable_runs(console.url, limit=console.limit)
        return _version([(r.run_id, r.status, r.updated_at, len(r.questions)) for r in runs])

    async def run_version(run_id: str) -> str:
        info = await api_durable.show_durable_run(console.url, run_id)
        return _version(
            [info.status, info.updated_at, len(info.steps), [q.path for q in info.questions]]
        )

    async def index(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        status = request.query_params.get("status", "")
        flow = request.query_params.get("flow", "").strip()
        try:
            runs = await api_durable.list_durable_runs(console.url, limit=console.limit)
            version = _version([(r.run_id, r.status, r.updated_at, len(r.questions)) for r in runs])
            # the filter is the query's, before the limit: a waiting run older than the
            # latest `limit` runs is still found by its status
            shown = (
                await api_durable.list_durable_runs(
                    console.url, limit=console.limit, status=status or None, plan=flow or None
                )
                if status or flow
                else runs
            )
            more = ""
            if not (status or flow) and len(runs) >= console.limit:
                total, unfinished = await api_durable.count_durable_runs(console.url)
                left = total - len(runs)
                hidden = unfinished - sum(
                    r.status in ("running", "waiting", "stopped") for r in runs
                )
                if left > 0:
                    more = f"{left} more run{'s' * (left != 1)} not listed" + (
                        f", {hidden} of them not ended: filter by status to see them"
                        if hidden > 0
                        else ""
                    )
            costs = {}
            for r in shown:
                if r.status != "unreadable":
                    with contextlib.suppress(FlowError):
                        costs[r.run_id] = (
                            await api_durable.show_durable_run(console.url, r.run_id)
                        ).cost
        except FlowError as e:
            return error_page(str(e), 500)
        text = pages.runs_page(
            shown, costs, status=status, flow=flow, database=_safe(console.url), version=version,
            more=more,
        )  # fmt: skip
        return html(text, request=request)

    async def show(
        request: Request,
        run_id: str,
        *,
        problems: dict[str, tuple[str, str]] | None = None,
        notice: str | None = None,
        status: int = 200,
    ) -> Response:
        try:
            info = await api_durable.show_durable_run(console.url, run_id, values=True)
            spec = await api_durable.recorded_run(console.url, run_id)
        except FlowError as e:
            return error_page(str(e), 404)
        version = _version(
            [info.status, info.updated_at, len(info.steps), [q.path for q in info.questions]]
        )
        text = pages.run_page(
            info, spec, console.csrf, problems=problems, notice=notice, version=version
        )
        return html(text, status, request)

    async def run_view(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        notice = {
            "answered": "answer sent: the run goes on",
            "cancelled": "cancel sent: each of the run's units stops at its next step",
            "resumed": "the run continues in a flowc resume process of its own",
        }.get(request.query_params.get("said", ""))
        return await show(request, request.path_params["run_id"], notice=notice)

    async def answer(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        fields, bad = await checked_form(request)
        if bad is not None:
            return bad
        run_id = request.path_params["run_id"]
        step, value = fields.get("step", ""), fields.get("value", "")
        try:
            await api_durable.answer_durable(console.url, run_id, step, value)
        except FlowError as e:  # refused as `flowc answer` refuses it: said beside the field
            return await show(request, run_id, problems={step: (value, str(e))}, status=400)
        return RedirectResponse(pages.run_url(run_id, "?said=answered"), status_code=303)

    async def cancel(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        _, bad = await checked_form(request)
        if bad is not None:
            return bad
        run_id = request.path_params["run_id"]
        try:
            await api_durable.cancel_durable(console.url, run_id)
        except FlowError as e:
            return await show(request, run_id, notice=str(e), status=400)
        return RedirectResponse(pages.run_url(run_id, "?said=cancelled"), status_code=303)

    async def resume(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        _, bad = await checked_form(request)
        if bad is not None:
            return bad
        run_id = request.path_params["run_id"]
        console.spawn("resume", run_id)
        return RedirectResponse(pages.run_url(run_id, "?said=resumed"), status_code=303)

    async def redrive(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        _, bad = await checked_form(request)
        if bad is not None:
            return bad
        run_id = request.path_params["run_id"]
        try:  # refused here as `flowc redrive` would refuse it, before a process starts
            await api_durable.recorded_run(console.url, run_id, redrive=True)
        except FlowError as e:
            return await show(request, run_id, notice=str(e), status=400)
        console.spawn("redrive", run_id)
        return RedirectResponse("/", status_code=303)

    async def reuse(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        _, bad = await checked_form(request)
        if bad is not None:
            return bad
        run_id = request.path_params["run_id"]
        try:
            spec = await api_durable.recorded_run(console.url, run_id)
            file = pages._edited_flow(spec)
            if file is None:
                raise InputError(f"run {run_id}'s file is gone: nothing to run again")
            if file.suffix == ".flow":  # refused in the page, not in a log: it must compile
                api_compile.compile_flow(file)
        except api_compile.CompileError as e:
            said = render_text(e.diagnostics, e.sources)
            return await show(request, run_id, notice=f"the edited flow does not compile:\n{said}",
                              status=400)  # fmt: skip
        except FlowError as e:
            return await show(request, run_id, notice=str(e), status=400)
        args = ["run", str(file), "--reuse", run_id, "--input", json.dumps(spec.get("input"))]
        for option, key in (("--config", "config"), ("--workspace", "workspace"),
                            ("--replay", "replay"), ("--model", "model")):  # fmt: skip
            if spec.get(key):
                args += [option, str(spec[key])]
        console.spawn(*args, name=f"reuse-{run_id}")
        return RedirectResponse("/", status_code=303)

    async def events(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        run_id = request.query_params.get("run")

        async def stream() -> Any:
            last = None
            quiet = 0.0
            ends = time.monotonic() + STREAM_S  # then the browser reconnects (`retry`)
            stopping = console.stop_event()
            yield f"retry: {RETRY_MS}\n\n"
            while (
                not stopping.is_set()
                and not await request.is_disconnected()
                and time.monotonic() < ends
            ):
                try:
                    version = await (run_version(run_id) if run_id else runs_version())
                except FlowError:
                    version = "gone"
                if version != last:
                    last = version
                    yield f"event: change\ndata: {version}\n\n"
                    quiet = 0.0
                elif quiet >= 15:
                    yield ": still here\n\n"
                    quiet = 0.0
                with contextlib.suppress(TimeoutError):  # the next poll, or the server stops
                    await asyncio.wait_for(stopping.wait(), console.poll)
                quiet += console.poll

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return Starlette(
        routes=[
            Route("/", index),
            Route("/runs/{run_id:path}/answer", answer, methods=["POST"]),
            Route("/runs/{run_id:path}/cancel", cancel, methods=["POST"]),
            Route("/runs/{run_id:path}/resume", resume, methods=["POST"]),
            Route("/runs/{run_id:path}/redrive", redrive, methods=["POST"]),
            Route("/runs/{run_id:path}/reuse", reuse, methods=["POST"]),
            Route("/runs/{run_id:path}", run_view),
            Route("/events", events),
        ]
    )


def _version(state: Any) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(state, default=str).encode()).hexdigest()[:16]


def _safe(url: str) -> str:

    return safe(url)


def serve(
    url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8421,
    on_ready: Any = None,
    poll: float = 1.0,
    limit: int = 50,
) -> None:
    """Serve the console of database ``url`` on ``host``:``port`` (``0``: a free port) until
    interrupted.  ``on_ready(address)`` is called with the address to open once it listens
    (with ``?token=…`` when ``host`` is not loopback)."""
    import socket

    import uvicorn

    token = None if is_loopback(host) else secrets.token_urlsafe(24)
    db_file = sqlite_path(url)
    log_dir = (db_file.parent if db_file is not None else Path.cwd() / ".flowc") / "ui-logs"
    console = Console(url, token=token, poll=poll, limit=limit, log_dir=log_dir)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    config = uvicorn.Config(
        build_app(console),
        log_level="warning",
        loop="asyncio",
        lifespan="off",
        timeout_graceful_shutdown=5,
        access_log=False,
    )

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:  # Ctrl-C, SIGTERM
            console.stop_event().set()  # the live-update streams end before the server waits
            super().handle_exit(sig, frame)

    server = Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if on_ready is not None and server.started:
            on_ready(address)
        await task

    try:
        asyncio.run(main())
    finally:
        sock.close()
        shutdown()
