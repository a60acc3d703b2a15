"""What the Compare page says beside its statistics: the caveats of
:mod:`evalstore.analysis.compare_caveats` (each interval clipped to the metric's range or
saying why not, a warning on one from fewer than 5 lists), as ``evalstore compare`` says
them.
"""

from __future__ import annotations

from evalstore.analysis.compare_caveats import with_caveats
from evalstore.metrics.ranges import value_range

__all__ = ["value_range", "with_caveats"]
