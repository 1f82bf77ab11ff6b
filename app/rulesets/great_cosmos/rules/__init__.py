"""The Tale of Great Cosmos (rules v6): pure rules, split by theme.

- `core`: stats, the d100 test, classification, karma (GC-S1, GC-T1..T3, GC-K1..K5)
- `odds`: exact odds of a test
- `sheet`: races, light/dark points, mental health, inventory, move (GC-S6, GC-S7, GC-I1..I4, GC-D2)
- `levels`: level-ups (GC-L1..L7)
- `postures`: postures, attacks, defenses, damage (GC-P1..P7)
- `turns`: grid, turn sequence, dash, turn order (GC-D1, GC-D3, GC-D4, GC-O1..O3)
"""

from app.rulesets.great_cosmos.rules.core import *  # noqa: F403
