-- Rewrite a hash that shrank into the compact encoding's size (see lib/compact.lua).
-- KEYS[1]          the hash
-- ARGV[1]          most fields of a compact hash (the server's hash-max-listpack-entries)
-- Returns 1 when the hash was rewritten, else 0.
--#include lib/compact.lua
return compact_hash(KEYS[1], tonumber(ARGV[1])) and 1 or 0
