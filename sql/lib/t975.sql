-- t(0.975, df), the quantile of a 95% Student t interval: {table} (student_t's q975, the table
-- up to 100 degrees of freedom, NULL beyond) or Cornish-Fisher's expansion in df = {df}.
-- A select-list item (`... as q`).
coalesce({table},
         1.959963984540054
         + (1.959963984540054 ^ 3 + 1.959963984540054) / (4 * ({df}))
         + (5 * 1.959963984540054 ^ 5 + 16 * 1.959963984540054 ^ 3
            + 3 * 1.959963984540054) / (96 * ({df}) ^ 2)
         + (3 * 1.959963984540054 ^ 7 + 19 * 1.959963984540054 ^ 5
            + 17 * 1.959963984540054 ^ 3 - 15 * 1.959963984540054)
           / (384 * ({df}) ^ 3)) as q
