"""The runs: the registry of runs and what is done to them.

- :mod:`~evalstore.runs.registry`: creating, naming and finding runs (``exp/name``,
  ``id:N``), their params and tags, the run-metadata value :class:`RunMeta`.
- :mod:`~evalstore.runs.edit`: renaming, tagging, deleting.
- :mod:`~evalstore.runs.selection`: choosing runs by experiment, tag, param or SQL filter.
- :mod:`~evalstore.runs.logged`: scalars logged at steps (``evalstore log``).
- :mod:`~evalstore.runs.live`: runs opened before their rows (a training loop), their batches
  of logged values; :mod:`~evalstore.runs.liveness`: their status (running, crashed...).

May import: :mod:`evalstore.metrics`, :mod:`evalstore.db` and below.
"""
