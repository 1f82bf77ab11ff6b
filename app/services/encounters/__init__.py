"""Combat encounters (API.md, "Encounters (combat)"): setup, initiative, turns,
actions, undo, per-viewer visibility. Each ruleset's own pieces are in
`rulesets/`, behind `EncounterRules`.

Callers import the module they need (`setup`, `turns`, `actions`…): this package's
`__init__` imports none of them, so importing one (`shown` from `characters`) never
runs the others, which import `characters` back."""
