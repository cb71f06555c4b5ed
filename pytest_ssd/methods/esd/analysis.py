"""A sweep (by block size, by QD) as points: each point is a test that records one value.

The report puts each sweep's curve together from its points' ``esd-point``
records (sweep name, the sweep's planned x values, the point's index, x and
value, or why it was skipped); a point that did not run is a gap.
"""

from __future__ import annotations

#: the derived record of one point of a sweep
POINT_RECORD = "esd-point"
