"""The rulesets, one package each (`great_cosmos`, `asgard`, `rulebook_d100`,
`worlds_awakening`), every one of the same shape:

- `rules/`: the pure rules (standard library, `app.rules` and `app.kit` only), with rule ids;
- `schemas.py`: the sheet, the campaign options and the request bodies, attacks included;
- `results.py`: the result models (`RESULTS`: capability -> models);
- `adapter.py`: the `RulesetAdapter` (tests, odds, level-ups, actions: `ADAPTER`);
- `combat.py`: the encounter capability (`COMBAT`);
- `examples.py`: the OpenAPI examples of its bodies (`EXAMPLES`);
- `ruleset.py`: the one typed declaration the registry lists (`RULESET`, a `Ruleset`).

`contract/` is what a ruleset implements (one module per contract), `registry.py` the one list
of them; `wire.py` and `events.py` gather every ruleset's results into the documents the routes answer with.
See docs/adding-a-ruleset.md."""
