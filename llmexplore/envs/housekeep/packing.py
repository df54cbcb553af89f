"""Receptacle capacity from footprints: can these objects lie side by side on this surface?

Housekeep places objects with a shelf bin packer over each receptacle's top surface and
refuses a placement that does not fit. The episode files keep what that needs: each
receptacle's surface size and each object's footprint (from the start placement). We
check a placement with first-fit decreasing-height shelf packing of all footprints on
the receptacle, recomputed from scratch, in either orientation of the surface. Unlike
the simulator's packer we may rearrange the objects already there, so we accept a little
more than it would; we never accept footprints whose total area exceeds the surface.
"""

from __future__ import annotations

from typing import Sequence

_EPS = 1e-6


def fits(width: float, depth: float, footprints: Sequence[tuple[float, float]]) -> bool:
    """True when all footprints can be packed in shelves on a ``width`` x ``depth`` surface."""
    if not footprints:
        return True
    area = sum(a * b for a, b in footprints)
    if area > width * depth + _EPS:
        return False
    return _shelf_pack(width, depth, footprints) or _shelf_pack(depth, width, footprints)


def _shelf_pack(width: float, depth: float, footprints: Sequence[tuple[float, float]]) -> bool:
    rects = []
    for a, b in footprints:
        short, long = (a, b) if a <= b else (b, a)
        if long <= width + _EPS:
            rects.append((long, short))  # lie along the shelf: thin shelves waste least depth
        elif short <= width + _EPS:
            rects.append((short, long))
        else:
            return False
    rects.sort(key=lambda r: r[1], reverse=True)
    shelves: list[list[float]] = []  # [free width, shelf depth]
    used = 0.0
    for w, h in rects:
        for shelf in shelves:
            if shelf[0] + _EPS >= w and shelf[1] + _EPS >= h:
                shelf[0] -= w
                break
        else:
            if used + h > depth + _EPS:
                return False
            shelves.append([width - w, h])
            used += h
    return True
