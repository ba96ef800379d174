"""Querysets over the catalogues: lookups, ordering, slices, counts and aggregates of
metrics and series (``docs/querysets.md``)."""
