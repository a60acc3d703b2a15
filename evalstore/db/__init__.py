"""The database layer: the DuckDB file, its schema, the SQL catalogue and the sandbox.

- :mod:`~evalstore.db.queries`: the catalogue of ``sql/`` files, templates and parameters.
- :mod:`~evalstore.db.schema`: the tables and views, the migrations and their checks.
- :mod:`~evalstore.db.connection`: opening a store (create, migrate, lock, read-only).
- :mod:`~evalstore.db.sandbox`: running users' SQL with external access off.
- :mod:`~evalstore.db.private_files`: the store's private ``.stage`` and ``.new`` files.

May import: :mod:`evalstore.errors`, :mod:`evalstore.version`, the NumPy core and rendering
(nothing that knows runs or metrics).
"""
