-- A COCO results file (a JSON array of {image_id, category_id, bbox: [x, y, w, h], score}),
-- read by DuckDB's streaming JSON reader: one row per element, in file order, fetched in
-- batches, so that the file is never held as Python objects. Each field is read as JSON and
-- its JSON type reported, so that the reader can name the record whose field is of the
-- wrong type (evalstore/ingest/formats/coco.py); numbers are converted by DuckDB
-- (correctly rounded, as Python's float()).
--
-- $path (varchar): the results file.
-- Output: image_id_type, image_id, category_id_type, category_id (json_type and text; a
-- string's text unquoted), bbox_type, bbox_len, x, y, w, h (double), score_type, score
-- (double); a missing or null field is NULL.
select
    json_type(image_id) as image_id_type,
    image_id ->> '$' as image_id,
    json_type(category_id) as category_id_type,
    category_id ->> '$' as category_id,
    json_type(bbox) as bbox_type,
    json_array_length(bbox) as bbox_len,
    try_cast(bbox -> 0 as double) as x,
    try_cast(bbox -> 1 as double) as y,
    try_cast(bbox -> 2 as double) as w,
    try_cast(bbox -> 3 as double) as h,
    json_type(score) as score_type,
    try_cast(score as double) as score
from read_json(
    $path,
    format = 'array',
    columns = {image_id: 'JSON', category_id: 'JSON', bbox: 'JSON', score: 'JSON'}
)
