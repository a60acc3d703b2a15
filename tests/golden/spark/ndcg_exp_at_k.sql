-- GENERATED from sql/metrics/ndcg_exp_at_k.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ndcg_exp_at_k: ndcg_exp at cut-off k: DCG over the top k ranks, IDCG over the first k of the
-- ideal order (trec_eval ndcg_cut_k with 2^grade - 1 for the grade). A NULL gain is 1 for a +1
-- label, 0 else. Ties: under `grouped` the expected DCG@k over a random order within each tie (a
-- tie cut by k gives each of its items the mean of its discounts within the top k), else the
-- policy's order (lib/dcg.sql). IDCG = 0 (no positive gain) -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
-- Output: run_id, group_id, value (one row per list).
WITH cutoff AS (
  SELECT
    CAST(:k AS BIGINT) AS k
), binary_lists AS (
  SELECT
    c.list_id,
    c.n_pos_labels,
    c.n_scores = c.n_ret AS untied
  FROM groups AS g
  JOIN list_stats AS c
    ON c.list_id = g.list_id
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id)
    AND g.task = :task
    AND :ties = 'grouped'
    AND (
      c.n_scores = c.n_ret OR (
        c.n_scores < c.n_ret AND 2 * c.n_scores <= c.n_ret
      )
    )
    AND NOT c.list_id IN (
      SELECT
        s.list_id
      FROM scores AS s
      WHERE
        ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task AND NOT s.gain IS NULL
    )
), graded_rows AS (
  SELECT
    *
  FROM scores
  WHERE
    NOT list_id IN (
      SELECT
        list_id
      FROM binary_lists
    )
), items AS (
  SELECT
    s.run_id,
    s.list_id,
    s.item_id,
    s.score,
    s.label,
    s.seq
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task
), lists AS (
  SELECT
    g.run_id,
    g.list_id,
    g.group_id,
    COALESCE(g.n_positives, c.n_pos_labels) AS n_pos,
    c.n_neg,
    c.n_ret,
    c.p_ret,
    c.n_scores
  FROM groups AS g
  JOIN list_stats AS c
    ON c.list_id = g.list_id
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id) AND g.task = :task
), given AS (
  SELECT
    s.run_id,
    s.list_id,
    s.item_id,
    s.score,
    s.label,
    s.seq,
    COALESCE(
      s.gain,
      CASE WHEN s.label = 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
    ) AS g
  FROM graded_rows AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task AND s.label <> 0
), scales AS (
  SELECT
    list_id,
    c,
    e,
    POWER(CAST(2.0 AS DOUBLE), -c) AS inv_c,
    POWER(CAST(2.0 AS DOUBLE), -e) AS inv_e
  FROM (
    SELECT
      list_id,
      CEIL(LOG(2, GREATEST(top, CAST(1.0 AS DOUBLE)))) AS c,
      CASE
        WHEN top > CAST(52.0 AS DOUBLE)
        THEN CEIL(top)
        ELSE CEIL(
          LOG(
            2,
            GREATEST(POWER(CAST(2.0 AS DOUBLE), top) - CAST(1.0 AS DOUBLE), CAST(1.0 AS DOUBLE))
          )
        )
      END AS e
    FROM (
      SELECT
        list_id,
        MAX(g) AS top
      FROM given
      GROUP BY
        list_id
    ) AS m
  ) AS t
), judged AS (
  SELECT
    x.run_id,
    x.list_id,
    x.item_id,
    x.score,
    x.label,
    x.seq,
    x.g * u.inv_c AS gain,
    POWER(CAST(2.0 AS DOUBLE), x.g - u.e) - u.inv_e AS gain_exp,
    u.inv_c AS gain_one,
    u.inv_e AS gain_exp_one
  FROM given AS x
  JOIN scales AS u
    ON u.list_id = x.list_id
), score_groups AS (
  SELECT
    run_id,
    list_id,
    score,
    COUNT(*) AS n,
    CAST(SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS BIGINT) AS r,
    CAST(SUM(CAST(gain * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS g,
    CAST(SUM(CAST(gain_exp * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS g_exp
  FROM judged
  WHERE
    NOT score IS NULL AND :ties = 'grouped'
  GROUP BY
    run_id,
    list_id,
    score
), score_starts AS (
  SELECT
    run_id,
    list_id,
    n,
    r,
    g,
    g_exp,
    1 + CAST(COALESCE(
      SUM(n) OVER (
        PARTITION BY list_id
        ORDER BY score DESC
        rows BETWEEN UNBOUNDED preceding AND 1 preceding
      ),
      0
    ) AS BIGINT) AS a
  FROM score_groups
), score_ranks AS (
  SELECT
    s.list_id,
    s.a,
    EXPLODE(
      IF(
        s.a > (
          LEAST(s.a + s.n, c.k + 1) - 1
        ),
        ARRAY(),
        SEQUENCE(s.a, (
          LEAST(s.a + s.n, c.k + 1) - 1
        ))
      )
    ) AS rn
  FROM score_starts AS s
  CROSS JOIN cutoff AS c
  WHERE
    s.a <= c.k
), score_discounts AS (
  SELECT
    list_id,
    a,
    CAST(SUM(
      CAST((
        CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, rn + CAST(1.0 AS DOUBLE)), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS d_k
  FROM score_ranks
  GROUP BY
    list_id,
    a
), ranked AS (
  SELECT
    run_id,
    list_id,
    score,
    label,
    gain,
    gain_exp,
    ROW_NUMBER() OVER (
      PARTITION BY list_id
      ORDER BY score DESC, CASE
        WHEN :ties = 'optimistic'
        THEN -label
        WHEN :ties = 'pessimistic'
        THEN label
        ELSE 0
      END NULLS LAST, seq NULLS LAST
    ) AS rn
  FROM judged
  WHERE
    NOT score IS NULL AND :ties IN ('optimistic', 'pessimistic', 'input')
  UNION ALL
  SELECT
    run_id,
    list_id,
    score,
    label,
    gain,
    gain_exp,
    ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY score DESC, item_id DESC, seq NULLS LAST) AS rn
  FROM judged
  WHERE
    NOT score IS NULL AND :ties = 'docid'
), tie_groups AS (
  SELECT
    s.run_id,
    s.list_id,
    s.a,
    s.n,
    s.r,
    s.g,
    s.g_exp,
    COALESCE(d.d_k, CAST(0.0 AS DOUBLE)) AS d_k
  FROM score_starts AS s
  LEFT JOIN score_discounts AS d
    ON d.list_id = s.list_id AND d.a = s.a
  UNION ALL
  SELECT
    r.run_id,
    r.list_id,
    r.rn AS a,
    CAST(1 AS BIGINT) AS n,
    CAST(CASE WHEN r.label = 1 THEN 1 ELSE 0 END AS BIGINT) AS r,
    CAST(SUM(CAST(r.gain * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS g,
    CAST(SUM(CAST(r.gain_exp * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS g_exp,
    CAST(SUM(
      CAST((
        CASE
          WHEN r.rn <= c.k
          THEN CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, r.rn + CAST(1.0 AS DOUBLE)), 0)
          ELSE CAST(0.0 AS DOUBLE)
        END
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS d_k
  FROM ranked AS r
  CROSS JOIN cutoff AS c
  GROUP BY
    r.run_id,
    r.list_id,
    r.rn,
    r.label
), index_groups AS (
  SELECT
    i.list_id,
    i.e,
    i.r,
    CASE WHEN b.untied THEN i.e ELSE t.n_optimistic - i.r + 1 END AS a
  FROM (
    SELECT
      list_id,
      tp,
      n AS e,
      COUNT(*) AS r
    FROM positive_ranks
    WHERE
      list_id IN (
        SELECT
          list_id
        FROM binary_lists
      )
    GROUP BY
      list_id,
      tp,
      n
  ) AS i
  JOIN binary_lists AS b
    ON b.list_id = i.list_id
  LEFT JOIN tied_ranks AS t
    ON t.list_id = i.list_id AND t.k = i.tp AND NOT b.untied
), index_ranks AS (
  SELECT
    s.list_id,
    s.a,
    s.e,
    s.r,
    EXPLODE(
      IF(
        s.a > (
          LEAST(s.e, c.k) + 1 - 1
        ),
        ARRAY(),
        SEQUENCE(s.a, (
          LEAST(s.e, c.k) + 1 - 1
        ))
      )
    ) AS rn
  FROM index_groups AS s
  CROSS JOIN cutoff AS c
  WHERE
    s.a <= c.k
), index_terms AS (
  SELECT
    list_id,
    CAST(r AS DOUBLE) AS g,
    CAST(e - a + 1 AS BIGINT) AS n,
    CAST(SUM(
      CAST((
        CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, rn + CAST(1.0 AS DOUBLE)), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS d_k
  FROM index_ranks
  GROUP BY
    list_id,
    a,
    e,
    r
), dcg AS (
  SELECT
    run_id,
    list_id,
    CAST(SUM(
      CAST((
        g_exp * (
          d_k / NULLIF(CAST(n AS DOUBLE), 0)
        )
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS dcg
  FROM tie_groups
  GROUP BY
    run_id,
    list_id
  UNION ALL
  SELECT
    l.run_id,
    l.list_id,
    CAST(SUM(
      CAST((
        t.g * (
          t.d_k / NULLIF(CAST(t.n AS DOUBLE), 0)
        )
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS dcg
  FROM index_terms AS t
  JOIN lists AS l
    ON l.list_id = t.list_id
  GROUP BY
    l.run_id,
    l.list_id
), unlisted AS (
  SELECT
    l.run_id,
    l.list_id,
    EXPLODE(
      IF(
        (
          LEAST(l.n_pos - COALESCE(p.n, 0), c.k) - 1
        ) < 0,
        ARRAY(),
        SEQUENCE(0, (
          LEAST(l.n_pos - COALESCE(p.n, 0), c.k) - 1
        ))
      )
    ) AS i
  FROM lists AS l
  CROSS JOIN cutoff AS c
  LEFT JOIN (
    SELECT
      list_id,
      COUNT(*) AS n
    FROM judged
    WHERE
      label = 1
    GROUP BY
      list_id
  ) AS p
    ON p.list_id = l.list_id
  WHERE
    l.n_pos > COALESCE(p.n, 0)
    AND NOT l.list_id IN (
      SELECT
        list_id
      FROM binary_lists
    )
), ideal_gains AS (
  SELECT
    run_id,
    list_id,
    gain_exp,
    COUNT(*) AS c
  FROM (
    SELECT
      run_id,
      list_id,
      gain_exp
    FROM judged
    UNION ALL
    SELECT
      u.run_id,
      u.list_id,
      COALESCE(o.one, CAST(1.0 AS DOUBLE)) AS gain_exp
    FROM unlisted AS u
    LEFT JOIN (
      SELECT DISTINCT
        list_id,
        gain_exp_one AS one
      FROM judged
    ) AS o
      ON o.list_id = u.list_id
  ) AS j
  GROUP BY
    run_id,
    list_id,
    gain_exp
), ideal_order AS (
  SELECT
    s.run_id,
    s.list_id,
    s.gain_exp,
    EXPLODE(
      IF(
        (
          LEAST(s.o + s.c, c.k) + 1 - 1
        ) < s.o + 1,
        ARRAY(),
        SEQUENCE(s.o + 1, (
          LEAST(s.o + s.c, c.k) + 1 - 1
        ))
      )
    ) AS pos
  FROM (
    SELECT
      run_id,
      list_id,
      gain_exp,
      c,
      CAST(COALESCE(
        SUM(c) OVER (
          PARTITION BY list_id
          ORDER BY gain_exp DESC
          rows BETWEEN UNBOUNDED preceding AND 1 preceding
        ),
        0
      ) AS BIGINT) AS o
    FROM ideal_gains
  ) AS s
  CROSS JOIN cutoff AS c
  WHERE
    s.o < c.k AND s.gain_exp <> CAST(0.0 AS DOUBLE)
), index_ideal AS (
  SELECT
    l.run_id,
    l.list_id,
    EXPLODE(
      IF(
        (
          LEAST(GREATEST(l.n_pos, b.n_pos_labels), c.k) + 1 - 1
        ) < 1,
        ARRAY(),
        SEQUENCE(1, (
          LEAST(GREATEST(l.n_pos, b.n_pos_labels), c.k) + 1 - 1
        ))
      )
    ) AS pos
  FROM lists AS l
  JOIN binary_lists AS b
    ON b.list_id = l.list_id
  CROSS JOIN cutoff AS c
), ideal AS (
  SELECT
    run_id,
    list_id,
    CAST(SUM(
      CAST((
        gain_exp / NULLIF(LOG(2, pos + CAST(1.0 AS DOUBLE)), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS ideal
  FROM ideal_order
  GROUP BY
    run_id,
    list_id
  UNION ALL
  SELECT
    run_id,
    list_id,
    CAST(SUM(
      CAST((
        CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, pos + CAST(1.0 AS DOUBLE)), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS ideal
  FROM index_ideal
  GROUP BY
    run_id,
    list_id
), ndcg AS (
  SELECT
    l.run_id,
    l.group_id,
    CASE
      WHEN i.ideal > 0
      THEN COALESCE(d.dcg, CAST(0.0 AS DOUBLE)) / NULLIF(i.ideal, 0)
    END AS value
  FROM lists AS l
  LEFT JOIN dcg AS d
    ON d.run_id = l.run_id AND d.list_id = l.list_id
  LEFT JOIN ideal AS i
    ON i.run_id = l.run_id AND i.list_id = l.list_id
)
SELECT
  run_id,
  group_id,
  value
FROM ndcg
