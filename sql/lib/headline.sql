-- The headline values of v_metrics (aliased v): evalstore.metrics.HEADLINE, the columns of
-- `evalstore leaderboard`. map of verification, matching and retrieval; map, map_voc07
-- and map_voc10 of classification; precision_at_sigma at 3 px, mma at 3 px and
-- homography_accuracy at eps 3 of keypoints; iou of outcomes. Overall values (slice ''),
-- the default tie policy (grouped), no protocol. A boolean expression, included in a WHERE.
v.slice = ''
and coalesce(v.params ->> 'ties', 'grouped') = 'grouped'
and v.params ->> 'protocol' is null
and ((v.task in ('verification', 'matching', 'retrieval') and v.base_metric = 'ap')
     or (v.task = 'classification' and v.base_metric in ('ap', 'ap_voc07', 'ap_voc10'))
     or (v.task = 'keypoints' and (
            (v.base_metric = 'precision_at_sigma' and cast(v.params ->> 'sigma' as double) = 3)
            or (v.base_metric = 'mma' and cast(v.params ->> 'threshold' as double) = 3)
            or (v.base_metric = 'homography_accuracy'
                and cast(v.params ->> 'eps' as double) = 3)))
     or (v.task = 'outcomes' and v.base_metric = 'iou'))
