"""Labelled metrics: series named by their labels, admitted under a cap, read as one
(``docs/labels.md``)."""
