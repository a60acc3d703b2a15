"""``evalstore ui``: a live local web app to explore, filter and compare the runs of a store.

The pages (:mod:`~evalstore.ui.pages`): runs (``/``: sortable, filtered by experiment, tag,
params and a ``--where`` predicate, columns chosen by the user, seeds grouped into
configurations with mean ± sd), compare (runs or configurations against a baseline, with
intervals and Holm-adjusted p-values, per-list differences and scatter, what changed),
curves (PR and MMA), history, per list (heatmaps per task) and SQL (read-only, with a CSV
download). The URL holds the selection (:mod:`~evalstore.ui.view`), so a link reproduces a
view. The figures are the dashboards' own (:mod:`evalstore.dashboards`).

The app (:mod:`~evalstore.ui.app`) is Starlette served by uvicorn; it opens the store
read-only for each request and holds nothing between requests, so ingests proceed while it
runs. The compare page is computed in a thread of its own and shows its progress and a
running estimate while it resamples items (:mod:`~evalstore.ui.progress`). :func:`serve`
binds the address first (a port in use is one clear error) and says where the app is;
:func:`launch` starts ``evalstore ui`` in a process of its own (from a notebook or a script)
and returns once it listens.
"""

from __future__ import annotations

import errno
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from evalstore.analysis.statistics import t_quantile
from evalstore.errors import EvalstoreError
from evalstore.store.facade import Store
from evalstore.ui.app import HEADERS, create_app, static_file

__all__ = ["HEADERS", "Running", "create_app", "launch", "serve", "url_of"]


def url_of(host: str, port: int) -> str:
    """The app's address (IPv6 hosts in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    db: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    lock_timeout: float = 10.0,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the store ``db`` until interrupted (Ctrl-C returns normally); ``on_ready`` is
    told the URL once the port is bound (port 0: a free port).

    Raises:
        EvalstoreError: the store cannot be opened read-only (missing, not a store, newer or
            older than this evalstore), or the address cannot be bound (naming it).
    """
    import uvicorn

    with Store(db, read_only=True, lock_timeout=lock_timeout):
        pass  # the same checks as every command, once, before serving
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        hint = (
            " (another app uses it: pass --port, or --port 0 for a free one)"
            if (exc.errno == errno.EADDRINUSE)
            else ""
        )
        raise EvalstoreError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    app = create_app(db, lock_timeout=lock_timeout, host=host)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    # what the first pages would load otherwise: SciPy (the t intervals of configurations,
    # 0.4 s) and plotly.min.js (4.8 MB), while the user opens the browser
    threading.Thread(target=_warm, daemon=True).start()
    if on_ready is not None:
        on_ready(url_of(host, sock.getsockname()[1]))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # Ctrl-C: uvicorn has shut down cleanly, then raised it again
    finally:
        sock.close()


def _warm() -> None:
    t_quantile(0.975, 2.0)
    static_file("plotly.min.js")


def _drain(stream: IO[str]) -> None:
    for _ in stream:  # each line read and let go
        pass


@dataclass
class Running:
    """An ``evalstore ui`` process started by :func:`launch`: its ``url``; :meth:`stop` ends
    it as Ctrl-C does."""

    process: subprocess.Popen[str]
    url: str

    def stop(self, timeout: float = 30) -> int:
        """Stop the app (SIGINT, as Ctrl-C) and return its exit code (0: stopped cleanly)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=timeout)


def launch(
    db: str | Path, *, host: str = "127.0.0.1", port: int = 0, lock_timeout: float = 10.0
) -> Running:
    """Start ``evalstore ui`` on the store ``db`` in a process of its own (port 0: a free
    one) and return it once it listens (``Running.url``).

    Raises:
        EvalstoreError: the app did not start (its error line).
    """
    argv = [sys.executable, "-m", "evalstore", "ui", "--db", str(db), "--host", host,
            "--port", str(port), "--lock-timeout", str(lock_timeout)]  # fmt: skip
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    stderr = process.stderr
    if stderr is None:  # stderr=PIPE always gives one
        raise EvalstoreError("evalstore ui: no pipe to read its address from")
    line = stderr.readline()
    found = re.search(r"http://\S+", line)
    if not found:
        process.kill()
        said = (line + stderr.read()).strip().removeprefix("Error: ")
        raise EvalstoreError(f"evalstore ui did not start: {said}")
    # keep reading what it says, so that a full pipe never blocks the app
    threading.Thread(target=_drain, args=(stderr,), daemon=True).start()
    return Running(process, found.group(0))
