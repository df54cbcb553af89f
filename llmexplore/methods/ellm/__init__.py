"""ELLM and ONI's ELLM-BoW baseline: rewards for reaching language goals (see ``method`` and ``bow``)."""
