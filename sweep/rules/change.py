"""One value a rule changed, as recorded in a transferred RunConfig's provenance."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    rule: str  # e.g. "batch.sqrt", "horizon.beta2"
    field: str  # the RunConfig path it set
    before: Any
    after: Any
    formula: str  # the formula with its source, one line

    def record(self) -> dict[str, Any]:
        return asdict(self)
