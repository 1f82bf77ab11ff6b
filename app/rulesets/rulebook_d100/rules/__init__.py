"""The pure rules of rulebook_d100 (`core`; `turns`: the fight's turn rules, RB-F3 free attack)."""
