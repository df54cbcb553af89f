"""MiniHack (minihack 1.0.2 on NLE 1.0.0): the exploration tasks of the E3B and NovelD papers.

The family speaks NetHack's language: its observation carries the keys the NetHack family's
small network reads (``message``, ``blstats``, a 9x9 ``crop`` around the agent), so that
network, ONI's captions, ELLM-BoW and Motif run on it unchanged. ``family.py`` declares the
tasks, ``adapter.py`` builds them, ``compat.py`` imports minihack on current setuptools.
"""
