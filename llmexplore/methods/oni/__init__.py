"""ONI (Zheng et al., 2024): an LM labels the agent's own messages while it trains.

Three reward rules share one pipeline (``method.py``): captions of the learner batch go to
the LM layer's ``AnnotationService`` (``labeler.py``); its labels become a lookup table
(``oni-retrieval``), train a caption classifier (``oni-classification``, ``classifier.py``),
or, for pairs of captions drawn from a reservoir of the agent's experience, train a
Motif-style preference model (``oni-ranking``, ``ranking.py``). The models train online on
the published schedule (``schedule.py``). See ``docs/ONI.md``.
"""
