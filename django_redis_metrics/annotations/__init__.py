"""Annotations: short notes in time ("Deploy v1.4") drawn on every chart as markers.

``annotate(text, when=None, tags=())`` stores one, ``annotations(start, end, tags=None)``
reads those of a range; ``manage.py annotate_metrics`` and the token-protected POST endpoint
of ``django_redis_metrics.urls`` store them from deploy scripts and CI.
"""

from .store import aannotate, aannotations, annotate, annotations

__all__ = ["aannotate", "aannotations", "annotate", "annotations"]
