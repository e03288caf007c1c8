"""Worker functions for tests that start processes (`minigpt.distributed.launch` uses spawn: a worker
function must be importable by name, so it lives here, not inside a test)."""
