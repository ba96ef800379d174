"""``manage.py import_metrics``: history older than Redis keeps, loaded into the archive.

Two sources, one module each: the admin's own CSV export (``csvfile.py``) and the keyspace of
django-redis-metrics 2.2, another project (``redis22.py``). Both write ``ArchivedSlice`` rows
through ``writing.py``, by the archive's upserts that *set* values (``archive/base.py``): an
import run twice writes the same rows, and counts nothing twice.
"""
