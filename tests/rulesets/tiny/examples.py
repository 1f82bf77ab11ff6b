"""The OpenAPI examples of tiny's bodies: capability -> examples."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, Any] = {"test": [{"stat": "grit"}, {"stat": "grit", "target": 5, "dice": [4]}]}
