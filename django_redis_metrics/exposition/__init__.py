"""The Prometheus exposition: every metric in Redis, in the Prometheus text format."""
