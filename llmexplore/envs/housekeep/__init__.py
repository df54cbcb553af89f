"""Housekeep (Kant et al., 2022) as a symbolic rearrangement task built from its published data.

The habitat simulator cannot run here; the task itself — rooms, receptacles, objects, the
start placement of each published episode, and the human judgements of where objects
belong — is data. See ``docs/housekeep.md`` for what is faithful and what is abstracted.

Modules: ``scenes`` (the published scene table), ``data`` (loading and checking the files), ``vocab`` (ids shared by observations,
captions and the policy), ``packing`` (receptacle capacity), ``world`` (the rules of one
episode), ``env`` (the gymnasium env), ``text`` (captions), ``placements`` (yes/no answers
and ELLM-style suggestions), ``policies`` (oracle and random reference policies),
``adapter`` (the suite's EnvAdapter).
"""
