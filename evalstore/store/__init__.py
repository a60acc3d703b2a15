"""The store: the :class:`~evalstore.store.facade.Store` facade users hold, and what runs
through it.

- :mod:`~evalstore.store.facade`: ``Store``, one DuckDB file: ingest, runs, logged values.
- :mod:`~evalstore.store.staging`: an ingest staged in a private file and copied in whole, so
  a second writer waits instead of failing.
- :mod:`~evalstore.store.staged`: the same staging and a first write's publishing on any
  :class:`~evalstore.db.connection.Database` (no polars: the light ``evalstore ingest``).
- :mod:`~evalstore.store.live`: ``evalstore.init`` and the ``Run`` a training loop logs
  scalars to; :mod:`~evalstore.store.exits`: the end of a process with runs still open.
- :mod:`~evalstore.store.user_sql`: users' SQL (``evalstore sql``) in the sandbox of a
  read-only store.

May import: :mod:`evalstore.ingest`, :mod:`evalstore.runs` and below.
"""
