"""The metrics: what each one is, its NumPy reference, its protocols, and users' own.

- :mod:`~evalstore.metrics.references`: the Python twin of every built-in metric, over the
  NumPy reference core (:mod:`evalstore.core`).
- :mod:`~evalstore.metrics.catalogue`: every built-in metric without its twin (no NumPy):
  what a command needs to check ``-m`` and find a cached value
  (:mod:`~evalstore.metrics.single_label_catalogue`: the single-label classification
  metrics' lines; :mod:`~evalstore.metrics.single_label_references`: their twins).
- :mod:`~evalstore.metrics.registry`: the one registry: a metric's SQL file, its twin, its
  tasks, parameters, direction and defaults (``METRICS``).
- :mod:`~evalstore.metrics.protocols`: named protocols (``voc07``, ``coco``, ``hpatches``...):
  the parameters that reproduce a benchmark's own code.
- :mod:`~evalstore.metrics.user`: users' metrics (SQL files with a header, entry-point twins),
  computed in a locked-down in-memory database.

May import: :mod:`evalstore.db`, :mod:`evalstore.core` and the modules below them.
"""
