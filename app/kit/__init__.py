"""The bottom layer: what every other layer shares (the error hierarchy, the
strict base model, dice-provenance fields, base campaign options). It imports
nothing of the app; `app.kit.errors` is stdlib only, so the pure rules use it."""
