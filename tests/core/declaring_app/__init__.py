"""An app of the tests whose ``metrics.py`` declares metrics (``test_declared.py``)."""
