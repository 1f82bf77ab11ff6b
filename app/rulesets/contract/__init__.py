"""What a ruleset implements, one module per contract:

- `adapter`: the operations on characters (`RulesetAdapter`: tests, odds, level-ups, rerolls,
  confrontations, group tests, character actions), each ruleset's adapter.py `ADAPTER`;
- `combat`: what an encounter needs from it (`EncounterRules`, `Pool`, `Party`, `Exchange`…),
  each ruleset's combat.py `COMBAT`;
- `ruleset`: the one typed declaration of a ruleset (`Ruleset`) the registry lists.

See docs/adding-a-ruleset.md."""
