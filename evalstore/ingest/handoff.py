"""Items made in a thread and taken by the caller: the one mechanism by which a reader thread
hands batches to the thread that consumes them.

An end of input is only ever the producer's own return: whatever stops it early (an error,
a KeyboardInterrupt that a library raised in that thread) is raised at the consumer, so that
a reader stopped part of the way never reads as a shorter input.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

__all__ = ["handed_over"]

T = TypeVar("T")

#: told by ``put`` whether to go on: False once the consumer has stopped
Put = Callable[[Any], bool]


def handed_over(
    produce: Callable[[Put], object], *, depth: int = 2, name: str = "evalstore-reader"
) -> Generator[Any, None, None]:
    """Run ``produce(put)`` in a thread and yield each item it puts, in order, up to
    ``depth`` ahead of the consumer. ``put(item)`` returns False once the consumer has stopped
    (``produce`` should then return; what it returns is ignored). The generator ends when
    ``produce`` returned; what it raised (any BaseException) is raised here. Closing the
    generator stops the producer and waits for its thread.

    >>> list(handed_over(lambda put: all(put(i) for i in range(3))))
    [0, 1, 2]
    """
    end = object()
    slots: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any, ok: bool = True) -> bool:
        while not stop.is_set():
            try:
                slots.put((ok, item), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            produce(put)
        except BaseException as exc:  # handed to the consumer, which raises it
            put(exc, ok=False)
        else:
            put(end)

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    try:
        while True:
            ok, item = slots.get()
            if not ok:
                raise item
            if item is end:
                return
            yield item
    finally:
        stop.set()
        worker.join()
