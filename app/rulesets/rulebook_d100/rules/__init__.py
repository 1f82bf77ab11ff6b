"""The pure rules of rulebook_d100 (`core`)."""
