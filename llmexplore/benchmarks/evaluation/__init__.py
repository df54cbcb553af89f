"""Trained checkpoints played on fresh seeds, and the evaluation record."""
