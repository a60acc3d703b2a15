-- GENERATED from sql/metrics/recip_rank.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- recip_rank: the reciprocal rank 1 / r of the first retrieved positive, 0 when none is
-- retrieved (trec_eval recip_rank; its mean over lists is MRR). Ties: under `grouped` the
-- expected value over a random order of the first tie group holding a positive: with its
-- first rank a, its n items and r positives, the first positive is at rank a + j - 1 with
-- probability P_j = C(n - j, r - 1) / C(n, r), j = 1 .. n - r + 1, computed as
-- P_1 = r / n, P_(j+1) = P_j * (n - r - j + 1) / (n - j) (a product as exp of a sum of logs);
-- the other policies put one item at each rank (n = r = 1). P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
WITH cutoff AS (
  SELECT
    CAST(2147483647 AS BIGINT) AS k
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
  FROM scores AS s
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
), first_hit AS (
  SELECT
    run_id,
    list_id,
    a,
    n,
    r
  FROM (
    SELECT
      run_id,
      list_id,
      a,
      n,
      r,
      ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY a NULLS LAST) AS o
    FROM tie_groups
    WHERE
      r > 0
  ) AS t
  WHERE
    o = 1
), places AS (
  SELECT
    run_id,
    list_id,
    a,
    n,
    r,
    EXPLODE(IF((
      n - r + 2 - 1
    ) < 1, ARRAY(), SEQUENCE(1, (
      n - r + 2 - 1
    )))) AS j
  FROM first_hit
), steps AS (
  SELECT
    run_id,
    list_id,
    a,
    n,
    r,
    j,
    CASE
      WHEN n - r - j + 1 > 0
      THEN LN(CAST(n - r - j + 1 AS DOUBLE) / NULLIF(CAST(n - j AS DOUBLE), 0))
      ELSE CAST(0.0 AS DOUBLE)
    END AS step
  FROM places
), chances AS (
  SELECT
    run_id,
    list_id,
    a,
    j,
    CAST(r AS DOUBLE) / NULLIF(CAST(n AS DOUBLE), 0) * EXP(
      COALESCE(
        CAST(SUM(CAST(step * POWER(2, 80) AS DECIMAL(38, 0))) OVER (
          PARTITION BY list_id
          ORDER BY j NULLS LAST
          rows BETWEEN UNBOUNDED preceding AND 1 preceding
        ) AS DOUBLE) * POWER(2, -80),
        CAST(0.0 AS DOUBLE)
      )
    ) AS p
  FROM steps
), expected AS (
  SELECT
    run_id,
    list_id,
    CAST(SUM(
      CAST((
        p / NULLIF(CAST(a + j - 1 AS DOUBLE), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS rr
  FROM chances
  GROUP BY
    run_id,
    list_id
)
SELECT
  l.run_id,
  l.group_id,
  CASE WHEN l.n_pos = 0 THEN NULL ELSE COALESCE(e.rr, CAST(0.0 AS DOUBLE)) END AS value
FROM lists AS l
LEFT JOIN expected AS e
  ON e.run_id = l.run_id AND e.list_id = l.list_id
