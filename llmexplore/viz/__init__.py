"""Watching trained agents: animations, reward plots, caption summaries and HTML pages."""
