"""`python -m app.openapi` prints the OpenAPI document (committed as openapi.json)."""

from __future__ import annotations

import json

from app.main import create_app


def render() -> str:
    return json.dumps(create_app().openapi(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
