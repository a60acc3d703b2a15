-- Schema 13: the homographies estimated from a pair's matches (e11..e33, r11..r33, n_inliers,
-- e_direction) are made when a metric first needs them, not at ingest.
--   estimated:        the pair's estimates are made (or were given): true for every pair
--                     before schema 13 and for ingests with estimate=True; false for a pair
--                     ingested lazily until evalstore.estimates makes them (the first
--                     evaluation of reprojection_error or homography_accuracy, or an export);
--   ransac_threshold: the RANSAC inlier threshold (px) its estimates are made with.
alter table pairs add column estimated boolean default true;
alter table pairs add column ransac_threshold double;
