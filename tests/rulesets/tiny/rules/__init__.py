"""Tiny's pure rules: standard library, `app.rules` and `app.kit` only."""
