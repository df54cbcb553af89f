"""Motif: LM preferences over NetHack captions, distilled into a reward model."""
