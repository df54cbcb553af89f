"""NetHack tasks (NLE 1.0.0)."""
