"""The archive: what Redis forgets, the site's Django database keeps.

Redis holds the recent, fine-grained part of every metric; its retention forgets the rest by
design. The archive keeps downsampled history (hourly and daily slices, the periods of sets)
for years in the site's own database, written by the cleaner that already runs
(``clean_metrics``) or by ``manage.py archive_metrics``. Reads (``history()``) span both.

``models.py`` holds the tables; the passes that fill them and the reads that use them live
beside them in this package.
"""
