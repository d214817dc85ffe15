"""`sweep proxy`: one sweep at one width, its workers on a backend, and its live view."""
