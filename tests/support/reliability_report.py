"""Figures the reliability tests measure, collected for docs/reliability.md by scripts/reliability-report.

`record` appends one JSON line to the file named by DSH_RELIABILITY_REPORT; without it, it does nothing.
"""

from __future__ import annotations

import json
import os
from typing import Any


def record(what: str, **figures: Any) -> None:
    path = os.environ.get("DSH_RELIABILITY_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"what": what, **figures}) + "\n")
