"""``evalstore`` and ``python -m evalstore``: the command line. A Ctrl-C while it starts
(importing the commands) ends as one line with exit 130, like one within a command."""

import sys


def main() -> None:
    try:
        from evalstore.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("Error: interrupted while starting; nothing was done\n")
        raise SystemExit(130) from None
    run()


if __name__ == "__main__":
    main()
