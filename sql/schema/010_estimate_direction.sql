-- Schema 10: pairs.e_direction, how the estimated homography e11..e33 (image 0 -> 1) was made.
--   'direct':  estimated image 0 -> 1 from the matches, cv2.findHomography(kp0, kp1, RANSAC),
--              as SuperPoint's compute_homography does (every ingest from schema 10 on);
--   'inverse': the inverse of the image 1 -> 0 estimate r11..r33 (ingests before schema 10).
-- RANSAC is not symmetric, so the two differ; homography_accuracy uses 'direct' estimates
-- only and gives pairs of older runs no value (re-ingest them).
alter table pairs add column e_direction varchar;
update pairs set e_direction = 'inverse' where e11 is not null;
