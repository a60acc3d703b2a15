-- A metric's parameters as a chart names them: `key=value` pairs of the JSON object {params},
-- comma-separated, the default tie policy (ties=grouped) left out. A select-list item
-- (`... as shown_params`), included where a series is named.
array_to_string(
    list_filter(
        list_transform(json_keys({params}), lambda k: k || '=' || ({params} ->> k)),
        lambda p: p <> 'ties=grouped'),
    ', ') as shown_params
