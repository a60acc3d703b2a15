"""``evalstore`` and ``python -m evalstore``: the command line. A Ctrl-C ends as one line with
exit 130: while it starts (importing the commands), within a command (which says what the
store holds), and in between (parsing the arguments, after the command finished).

A SIGINT that the parent ignored (a job that a script started in the background, ``nohup``)
stays ignored for the whole command, which runs to its end. Python leaves an ignored SIGINT
ignored, but importing polars installs a handler of its own over it (polars 2.1), which then
stopped polars' readers part of the way; so the signal is also blocked, here, before any
thread is started, and every thread started later inherits the mask."""

import sys


def main() -> None:
    try:
        import signal  # here, not at the top: importing it takes long enough to be stopped

        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        from evalstore.cli import main as run
        from evalstore.cli.interrupts import INTERRUPTS, stop_watching
    except (KeyboardInterrupt, RuntimeError) as exc:
        if not _interrupt(exc):
            raise
        sys.stderr.write("Error: interrupted while starting; nothing was done\n")
        raise SystemExit(130) from None
    try:
        run()
    except KeyboardInterrupt:  # outside Typer's own handling
        _untold(INTERRUPTS)
        raise SystemExit(130) from None
    except SystemExit as exc:
        if exc.code == 130:  # Typer ends a Ctrl-C outside a command without a word
            _untold(INTERRUPTS)
        raise
    finally:
        # the command is over: a Ctrl-C now would only stop Python's shutdown (joining
        # threads), printed as an "Exception ignored" traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stop_watching()


def _interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a KeyboardInterrupt, or the RuntimeError Python raises
    when one stops a class's ``__set_name__`` (``import platform`` builds such a class)."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__  # type: ignore[assignment]
    return False


def _untold(interrupts: dict[str, bool]) -> None:
    """The line of a Ctrl-C that no command printed."""
    if not interrupts["told"]:
        sys.stderr.write(
            "Error: interrupted after the command finished\n"
            if interrupts["finished"]
            else "Error: interrupted before the command started; nothing was done\n"
        )


if __name__ == "__main__":
    main()
