"""Networks shared by the RL engine and the methods: the family encoders' lookup and common parts.

A layer below ``agents`` and ``methods`` (docs/ARCHITECTURE.md): both build networks from it, neither
imports the other for one.
"""
