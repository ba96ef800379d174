"""The core every kind of metric builds on: connection, keys, Lua scripts, batches, catalogue,
the Metric base class, validation, time and calendar periods, and what cleaners share."""
