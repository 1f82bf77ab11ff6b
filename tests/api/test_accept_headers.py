"""A 415 tells the client which media type to send (RFC 9110 §15.5.16): `Accept-Post:
application/json` on a POST, `Accept-Patch: application/json` on a PATCH (RFC 5789),
whether the body's Content-Type is not JSON or it has none and does not parse."""

from __future__ import annotations

import pytest

from tests.api.support import assert_problem

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize("headers", [FORM, {"Content-Type": "text/plain"}, {}], ids=["form", "text", "none"])
def test_a_415_on_a_post_names_json_in_accept_post(client, campaign, hero, headers):
    for path in (f"/v1/campaigns/{campaign.id}/rolls", f"/v1/characters/{hero['id']}/tests"):
        r = client.post(path, content=b"expression=d6", headers={**campaign.gm, **headers})
        assert_problem(r, 415, "unsupported-media-type")
        assert r.headers["Accept-Post"] == "application/json"
        assert "Accept-Patch" not in r.headers


@pytest.mark.parametrize("headers", [FORM, {}], ids=["form", "none"])
def test_a_415_on_a_patch_names_json_in_accept_patch(client, campaign, hero, headers):
    for path in (f"/v1/characters/{hero['id']}", f"/v1/campaigns/{campaign.id}"):
        r = client.patch(path, content=b"name=x", headers={**campaign.gm, **headers})
        assert_problem(r, 415, "unsupported-media-type")
        assert r.headers["Accept-Patch"] == "application/json"
        assert "Accept-Post" not in r.headers


def test_other_refusals_of_a_body_carry_neither(client, campaign, hero):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": 5}, headers=campaign.gm)
    assert_problem(r, 422, "validation-error")
    r2 = client.post(
        f"/v1/characters/{hero['id']}/tests",
        content=b'{"stat": ',
        headers={**campaign.gm, "Content-Type": "application/json"},
    )
    assert_problem(r2, 400, "malformed-json")
    for response in (r, r2):
        assert "Accept-Post" not in response.headers and "Accept-Patch" not in response.headers
