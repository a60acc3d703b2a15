"""The analysis: values computed from stored rows, and what is concluded from them.

A *list* is one ranked list (a query, a class, an image pair: ``group_id`` in the tables); a
*configuration* is the set of runs that are equal but for their seed.

- :mod:`~evalstore.analysis.estimates`: homographies estimated from stored matches, once.
- :mod:`~evalstore.analysis.evaluate`: metrics computed in SQL and cached by definition SHA;
  :mod:`~evalstore.analysis.eval_plan` (what a call computes, its cache key and staleness)
  and :mod:`~evalstore.analysis.eval_store` (the SQL that stores values), without polars,
  which ``evalstore eval`` also uses alone.
- :mod:`~evalstore.analysis.statistics`: bootstrap intervals, sign-flip tests, Holm.
- :mod:`~evalstore.analysis.resampling`: the items of few lists resampled within their label;
  :mod:`~evalstore.analysis.reweighting`: AP and fpr95's replicates as reweighted fixed orders,
  their multiplicities drawn by :mod:`~evalstore.analysis.multiplicities`, one list ranked
  by :mod:`~evalstore.analysis.grouped_ranking`.
- :mod:`~evalstore.analysis.det_matching`, :mod:`~evalstore.analysis.det_lists`,
  :mod:`~evalstore.analysis.det_items`: a detection run's matches under each protocol, its
  ranked lists, the objects two runs found or missed; all made from the stored boxes.
- :mod:`~evalstore.analysis.intervals`: the bootstrap interval of one run's value
  (``eval --ci``); :mod:`~evalstore.analysis.run_draws`: a run's rows as its twin reads them,
  resampled by item.
- :mod:`~evalstore.analysis.configurations`: runs grouped into configurations.
- :mod:`~evalstore.analysis.pairing`: what a comparison resamples, and its statistics;
  :mod:`~evalstore.analysis.run_value_pairs`: those of a run value recomputed from image pairs
  (the pose AUCs); :mod:`~evalstore.analysis.watching`: its item resampling as it goes (the
  UI's progress).
- :mod:`~evalstore.analysis.compare`: comparisons of runs or configurations; history;
  :mod:`~evalstore.analysis.compare_caveats`: what their intervals say beside them.
- :mod:`~evalstore.analysis.leaderboard`, :mod:`~evalstore.analysis.diff`: the headline
  table; what changed between two runs, list by list and item by item.
- :mod:`~evalstore.analysis.gate`: the regression gate (``evalstore check``).
- :mod:`~evalstore.analysis.twins`: the twin test of a user's metric.

May import: :mod:`evalstore.store` and below.
"""
