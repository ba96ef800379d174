"""Funnels: where users drop out, from unique-user bitmaps (``Funnel``) or, in order, from an
event series (``Funnel.ordered``)."""

from .model import Funnel, FunnelRange
from .ordered import OrderedFunnel

__all__ = ["Funnel", "FunnelRange", "OrderedFunnel"]
