"""Crafter tasks (crafter 1.8.3)."""
