"""The keys of one event series, all in the series' hash tag (one Redis Cluster slot).

Keys (``<p>`` = ``<PREFIX>:events:{<name>}``)::

    <p>:seq                  id counter
    <p>:time                 sorted set, id -> timestamp
    <p>:e:<id>               hash of one event, field -> tagged value
    <p>:by:<field>:<value>   sorted set, id -> timestamp, per indexed field and value
    <p>:values:<field>       set of the values seen of an indexed field
    <p>:cache:<window>       sorted set, window start -> "start:count" (closed windows only)
    <p>:cachesizes           set of the window sizes cached
    <p>:meta                 hash: retention, max_values, "i:<field>" per indexed field
                             (catalogue marker)
"""

from __future__ import annotations

from ..core.keys import metric_key

KIND = "events"
#: The indexed value that stands for every value beyond a field's cap of distinct values.
OTHER_VALUE = "(other)"


class SeriesKeys:
    """Key names of the series ``name``."""

    name: str

    def key(self, *parts: object) -> str:
        return metric_key(KIND, self.name, *parts)

    @property
    def time_key(self) -> str:
        return self.key("time")

    @property
    def meta_key(self) -> str:
        return self.key("meta")

    @property
    def sizes_key(self) -> str:
        return self.key("cachesizes")

    def event_key(self, event_id: int) -> str:
        return self.key("e", event_id)

    def index_key(self, field: str, text: str) -> str:
        return self.key("by", field, text)

    def values_key(self, field: str) -> str:
        return self.key("values", field)

    def cache_key(self, window: int) -> str:
        return self.key("cache", window)
