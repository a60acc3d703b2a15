"""The UI's web app: Starlette routes over the pages, the store opened read-only per request.

Every request opens the store read-only, makes it the sandbox of ``evalstore sql``
(:func:`evalstore.db.sandbox.lock_down`: nothing outside the store can be read, no setting
changed), answers and closes it, under one lock (one request at a time: a local app for one
user). Between requests the app holds no connection, so ``evalstore ingest`` and every other
writer proceed while it runs; a request that meets a writer's lock waits for it
(``lock_timeout``) and says so if it must give up. The Compare page is computed in a thread
of its own, under the same lock, and shows its progress while it resamples items
(:mod:`evalstore.ui.progress`); every other page too is computed in a thread of its own and
shows what it does once it takes over 2 s.

The pages carry no inline script and every response forbids loading anything from another
host (a Content-Security-Policy of ``'self'``): plotly.min.js is served by the app itself.
Requests naming another host than the one the app listens on are refused (a web page of
another site cannot reach the app through DNS rebinding), unless it listens on every address
(``0.0.0.0``, ``::``): then the user has opened it to the network on purpose and a request may
name the machine by any of its addresses or names (:func:`trusted_hosts`, docs/ui.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from evalstore.dashboards.pages import draw_script, plotly_js
from evalstore.db import sandbox
from evalstore.errors import EvalstoreError, StoreLocked
from evalstore.store.facade import Store
from evalstore.ui import pages
from evalstore.ui.comparing import compare_page
from evalstore.ui.progress import (
    LATEST,
    SLOW,
    WAIT,
    Answer,
    Job,
    Jobs,
    page_progress,
    progress_page,
    progress_state,
)
from evalstore.ui.progress import store_signature as signature
from evalstore.ui.shell import message, page
from evalstore.ui.view import View

__all__ = ["HEADERS", "STATIC", "create_app", "static_file", "trusted_hosts"]

#: Sent with every page: nothing from another host, no inline script, no framing.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_JS, _CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
#: What the app serves under /static/, with its media type.
STATIC = {"plotly.min.js": _JS, "ui.js": _JS, "progress.js": _JS, "ui.css": _CSS}

Body = Callable[[Store, View], str]


@cache
def static_file(name: str) -> bytes:
    """A file the app serves under ``/static/`` (made once): plotly.min.js, the script that
    draws the figures (the static pages' own, :func:`evalstore.dashboards.pages.draw_script`)
    and the stylesheet."""
    if name == "plotly.min.js":
        return plotly_js()
    if name == "ui.js":
        return draw_script("plotly.min.js did not load from this app.").encode("utf-8")
    return (resources.files("evalstore.ui") / "static" / name).read_bytes()


def create_app(
    db: str | Path,
    *,
    lock_timeout: float = 10.0,
    host: str = "127.0.0.1",
    wait: float = WAIT,
    latest: float = LATEST,
    slow: float = SLOW,
) -> Starlette:
    """The app serving the store ``db`` (read-only, re-opened per request).

    Args:
        db: the store's file; it must exist.
        lock_timeout: seconds a request waits while a writer holds the store.
        host: the address the app listens on; requests must name a host of
            :func:`trusted_hosts`.
        wait: seconds the Compare page waits for its answer before it shows the progress of
            its item resampling instead (:mod:`evalstore.ui.progress`); ``latest``: seconds
            after which it shows that it computes, whatever it computes (every other page:
            ``slow``).
    """
    path = Path(db)
    lock = threading.Lock()
    jobs = Jobs()

    @contextlib.contextmanager
    def opened() -> Iterator[Store]:
        with lock, Store(path, read_only=True, lock_timeout=lock_timeout) as store:
            sandbox.lock_down(store.con)
            yield store

    def answer(view: View, body: Body, seen: Callable[[list[str]], None] | None = None) -> Answer:
        status, experiments = 200, []
        try:
            with opened() as store:
                experiments = store.query("dashboards/experiments")["experiment"].to_list()
                if seen is not None:
                    seen(experiments)
                html = body(store, view)
        except StoreLocked as exc:
            status, html = 503, message(f"{exc} (reload when the writer is done)", "error")
        except EvalstoreError as exc:
            status, html = 400, message(str(exc), "error")
        return Answer(status, html, experiments)

    def respond(route: str, title: str, view: View, done: Answer) -> Response:
        text = page(
            route,
            title,
            done.html,
            view=view,
            experiments=done.experiments,
            store=str(path),
            filters=route != "/sql",
        )
        return HTMLResponse(text, status_code=done.status, headers=HEADERS)

    def compare(request: Request) -> Response:
        """The Compare page, computed in a thread of its own: its answer if it comes within
        ``wait`` seconds or resamples no items, else the progress of its item resampling
        (evalstore.ui.progress)."""
        try:
            view = View.parse(request.query_params.multi_items())
        except EvalstoreError as exc:
            error = Answer(400, message(str(exc), "error"), [])
            return respond("/compare", "Compare", View(), error)

        def compute(job: Job) -> Answer:
            return answer(view, compare_page, job.seen)

        job = jobs.start((tuple(view.query()), signature(path)), compute)
        with job.waited():
            if not job.finished.wait(wait):  # then until it resamples items, or ``latest``
                job.watch.begun.wait(max(0.0, latest - wait))
        if job.finished.is_set():
            jobs.forget(job)  # served: the next request computes anew
            return respond("/compare", "Compare", view, job.result())
        shown = Answer(200, progress_page(job), job.experiments)
        return respond("/compare", "Compare", view, shown)

    def compare_progress(request: Request) -> Response:
        ident = request.query_params.get("job", "")
        job = jobs.get(int(ident)) if ident.isdigit() else None
        return JSONResponse(progress_state(job), headers=HEADERS)

    def watched(path_: str, title: str, body: Body, status: str) -> Route:
        """A page computed in a thread of its own: its answer if it comes within ``slow``
        seconds, else its progress (``status``, the time so far), until it is answered."""

        def endpoint(request: Request) -> Response:
            try:
                view = View.parse(request.query_params.multi_items())
            except EvalstoreError as exc:
                return respond(path_, title, View(), Answer(400, message(str(exc), "error"), []))

            def compute(job: Job) -> Answer:
                return answer(view, body, job.seen)

            job = jobs.start((path_, tuple(view.query()), signature(path)), compute)
            job.status = status  # before any progress is shown
            with job.waited():
                job.finished.wait(slow)
            if job.finished.is_set():
                jobs.forget(job)
                return respond(path_, title, view, job.result())
            shown = Answer(200, page_progress(job, title), job.experiments)
            return respond(path_, title, view, shown)

        return Route(path_, endpoint, methods=["GET"], name=title)

    def sql_csv(request: Request) -> Response:
        try:
            view = View.parse(request.query_params.multi_items())
            with opened() as store:
                text, note = pages.sql_csv(store, view.q)
        except StoreLocked as exc:  # as the pages say it
            error = f"Error: {exc} (try again when the writer is done)\n"
            return PlainTextResponse(error, status_code=503, headers=HEADERS)
        except EvalstoreError as exc:
            return PlainTextResponse(f"Error: {exc}\n", status_code=400, headers=HEADERS)
        headers = {**HEADERS, "Content-Disposition": 'attachment; filename="query.csv"'}
        if note:  # the CSV itself cannot say it
            headers["X-Evalstore-Note"] = note
        return Response(text, media_type="text/csv; charset=utf-8", headers=headers)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found\n", status_code=404)
        headers = {**HEADERS, "Cache-Control": "max-age=3600"}
        return Response(static_file(name), media_type=STATIC[name], headers=headers)

    routes = [
        watched("/", "Runs", pages.runs_page, "Reading the runs and their values…"),
        Route("/compare", compare, methods=["GET"], name="Compare"),
        Route("/compare/progress", compare_progress, methods=["GET"]),
        watched("/curves", "Curves", pages.curves_page, "Computing the runs' curves…"),
        watched("/history", "History", pages.history_page, "Reading the runs' history…"),
        watched("/lists", "Per list", pages.lists_page, "Reading each list's values…"),
        watched("/sql", "SQL", pages.sql_page, "Running the query…"),
        Route("/sql.csv", sql_csv, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]
    hosts = trusted_hosts(host)
    return Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)]
    )


def trusted_hosts(host: str) -> list[str]:
    """The hosts a request may name (its Host header) when the app listens on ``host``.

    Every host (``["*"]``) when ``host`` is every address (``0.0.0.0``, ``::``, ``*``): the
    user bound the network on purpose, and the machine's addresses and names are many (each
    interface, the hostname, a proxy's name). Else ``host`` itself, the loopback names and,
    for an address that is not a loopback one, the machine's hostname: a page of another
    site, whose own name points at this machine (DNS rebinding), is refused.
    """
    bare = host.strip().removeprefix("[").removesuffix("]")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if bare == "*" or (address is not None and address.is_unspecified):
        return ["*"]
    named = f"[{bare}]" if address is not None and address.version == 6 else bare
    hosts = {named.lower(), "localhost", "127.0.0.1", "[::1]"}
    if address is None or not address.is_loopback:
        hosts.add(socket.gethostname().lower())
    return sorted(hosts)
