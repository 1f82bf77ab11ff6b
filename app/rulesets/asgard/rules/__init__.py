"""The `asgard` ruleset (Clé en main 3d6 system): rule ids AS-… in shared/rules/asgard.md.

core: tests and heroism (AS-T, AS-H); odds: exact probabilities; contests:
opposition and cooperation (AS-T6, AS-T9); hazards: character actions
(AS-C5..C10, AS-C12); combat: encounter-time rules (AS-C1..C4, AS-C11, AS-C13).
"""

from app.rulesets.asgard.rules.core import *  # noqa: F403  (the core API; see core.__all__)
from app.rulesets.asgard.rules.core import __all__  # noqa: F401
