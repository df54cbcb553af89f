"""Grid files, expanded into validated cells, and the backends that run them."""
