"""The write path of requests: collected writes, the background sender, fail-open."""
