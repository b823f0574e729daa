"""What a fault test measured, kept for `bench/faults.py`.

A fault test records figures with `fault_figures.record(name, value, unit)`. When
`DESKMCP_FAULT_FIGURES` names a file (bench/faults.py sets it), each test's figures are appended to
it as one JSON line when the test ends; otherwise they stay in memory."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

FIGURES_FILE = "DESKMCP_FAULT_FIGURES"


@dataclass
class FaultFigures:
    test: str
    figures: list[dict[str, object]] = field(default_factory=list)

    def record(self, name: str, value: float | int | str, unit: str = "") -> None:
        """One measured figure, e.g. `record("deliveries", 1)` or `record("recovered after", 2.4, "s")`."""
        self.figures.append({"name": name, "value": value, "unit": unit})

    def write(self) -> None:
        target = os.environ.get(FIGURES_FILE)
        if not target or not self.figures:
            return
        line = json.dumps({"test": self.test, "figures": self.figures}, ensure_ascii=False)
        with Path(target).open("a", encoding="utf-8") as out:
            out.write(line + "\n")
