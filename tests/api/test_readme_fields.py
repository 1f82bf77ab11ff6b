"""docs/clients.md documents the fields the rules-fidelity work changed, as the code has them:
Great Cosmos' `posture_advantage` (GC-P5, a rule-governed sheet field) and Asgard's
removed request field `improved` (a 422)."""

from __future__ import annotations

import re
from pathlib import Path

from app.rulesets.asgard import schemas as asgard
from app.rulesets.great_cosmos import schemas as great_cosmos
from app.models.governance import governed_fields

CLIENTS = (Path(__file__).resolve().parents[2] / "docs" / "clients.md").read_text()


def paragraph(field: str) -> str:
    """The list item of docs/clients.md that starts by naming `field` in backticks."""
    found = re.search(rf"^- [^\n]*`{field}`[^\n]*\n(?:  [^\n]*\n)*", CLIENTS, re.MULTILINE)
    assert found, f"docs/clients.md has no item about `{field}`"
    return " ".join(found[0].split())


def test_gc_p5_posture_advantage_is_documented_as_the_governed_field_it_is():
    assert governed_fields(great_cosmos.Sheet)["posture_advantage"] is False  # governed, not set at creation
    text = paragraph("posture_advantage")
    assert "GC-P5" in text and "rule-governed" in text and "403" in text and "422" in text


def test_as_t4_the_removed_improved_field_is_documented_as_a_422():
    assert "improved" not in asgard.TestRequest.model_fields
    text = paragraph("improved")
    assert "removed" in text and "422" in text and "AS-T4" in text
