"""Campaigns and players: creation with their tokens, reads, option updates, the tokens'
lifecycle (rotation, removal of a player, deletion of a campaign) and the invitations that
give a player a credential per device."""

from __future__ import annotations

import io
import secrets
from datetime import timedelta
from typing import Any

import segno
from sqlalchemy import bindparam, delete, func, insert
from sqlmodel import Session, col, select

from app.core.security import hash_token, new_token
from app.kit.errors import Conflict, NotFound
from app.models.schemas import (
    CampaignCreate,
    CampaignCreated,
    CampaignPublic,
    CampaignUpdate,
    InviteCreate,
    PlayerCreate,
    PlayerCreated,
    PlayerPublic,
    merge_metadata,
)
from app.models.tables import (
    Campaign,
    Character,
    Combatant,
    Credential,
    DiceEpoch,
    Encounter,
    EncounterAction,
    Event,
    EventCounter,
    IdempotencyRecord,
    Invite,
    LogEntry,
    LogEntryCharacter,
    Player,
    as_utc,
    core_table,
    utcnow,
)
from app.models.validation import InvalidBody, validate
from app.rulesets.registry import RULESET_IDS, get_adapter
from app.services import epoch_store, events
from app.services.auth import forget
from app.services.characters import orphan
from app.services.locks import NO_KEY_UPDATE
from app.services.pages import check_if_match, created_order_page
from app.services.records import Principal
from app.services.uow import UnitOfWork, load_campaign


def validated_options(ruleset: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """Options checked against the ruleset (unknown option → 422), defaults filled."""
    adapter = get_adapter(ruleset)
    return validate(adapter.Options, options or {}, loc=("body", "options")).model_dump(mode="json")


def _public(campaign: Campaign, role: str | None) -> dict[str, Any]:
    data = campaign.model_dump(exclude={"client_metadata"})
    data["options"] = get_adapter(campaign.ruleset).options_as_now(campaign.options)  # as read (see `public`)
    return CampaignPublic.model_validate({**data, "metadata": campaign.client_metadata, "role": role}).model_dump()


def create_campaign(session: Session, data: CampaignCreate) -> dict[str, Any]:
    if data.ruleset not in RULESET_IDS:
        raise InvalidBody(f"unknown ruleset {data.ruleset!r}; known: {', '.join(RULESET_IDS)}", field="ruleset")
    options = validated_options(data.ruleset, data.options)
    campaign = Campaign(name=data.name, ruleset=data.ruleset, options=options, client_metadata=data.metadata or {})
    token = new_token("gm")
    session.add(campaign)
    session.flush()
    session.add(Credential(token_hash=hash_token(token), campaign_id=campaign.id, role="gm"))
    epoch_store.open_epoch(session.connection(), campaign.id)  # committed to before its first die
    session.commit()
    return CampaignCreated.model_validate({**_public(campaign, "gm"), "gm_token": token}).model_dump()


def read_campaign(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    return _public(load_campaign(session, principal, campaign_id), principal.role)


def update_campaign(
    session: Session, principal: Principal, campaign_id: str, data: CampaignUpdate, if_match: str | None = None
) -> dict[str, Any]:
    campaign = load_campaign(session, principal, campaign_id, for_update=True)
    check_if_match(campaign.version, if_match, "campaign")
    if data.name is not None:
        campaign.name = data.name
    if data.options is not None:
        stored = get_adapter(campaign.ruleset).options_as_now(campaign.options)
        campaign.options = validated_options(campaign.ruleset, {**stored, **data.options})
    if data.metadata is not None:
        campaign.client_metadata = merge_metadata(campaign.client_metadata, data.metadata)
    campaign.version += 1
    campaign.updated_at = utcnow()
    session.add(campaign)
    shown = _public(campaign, principal.role)
    events.record(session, campaign_id, "campaign.updated", {k: v for k, v in shown.items() if k != "role"})
    session.commit()
    return shown


def list_players(
    session: Session, principal: Principal, campaign_id: str, *, limit: int = 50, cursor: str | None = None
) -> dict[str, Any]:
    load_campaign(session, principal, campaign_id)
    return created_order_page(
        session,
        select(Player).where(Player.campaign_id == campaign_id),
        Player,
        limit=limit,
        cursor=cursor,
        shape=lambda p: PlayerPublic.model_validate(p.model_dump()).model_dump(),
    )


def create_player(
    session: Session, principal: Principal, campaign_id: str, data: PlayerCreate, *, max_players: int
) -> dict[str, Any]:
    """A new player and its token; 409 once the campaign has MAX_PLAYERS_PER_CAMPAIGN
    players (tokens are minted per player, so an unbounded count would multiply any
    per-token limit). The count is taken under the campaign's row lock (PostgreSQL;
    SQLite writers are serialized already), so concurrent adds cannot pass the cap."""
    cap = max_players
    load_campaign(session, principal, campaign_id, for_update=True)
    players = session.exec(select(func.count()).select_from(Player).where(Player.campaign_id == campaign_id)).one()
    if players >= cap:
        raise Conflict(
            f"a campaign has at most {cap} players (MAX_PLAYERS_PER_CAMPAIGN)",
            extra={"max_players": cap},
            code="too_many_players",
        )
    player = Player(campaign_id=campaign_id, name=data.name)
    token = new_token("pl")
    session.add(player)
    session.flush()
    session.add(Credential(token_hash=hash_token(token), campaign_id=campaign_id, player_id=player.id, role="player"))
    events.record(session, campaign_id, "player.created", {"id": player.id, "name": player.name})
    session.commit()
    return PlayerCreated.model_validate({**player.model_dump(), "token": token}).model_dump()


# --- the tokens' lifecycle (API.md): a credential is never edited, only replaced or deleted ---


def _drop_credentials(session: Session, where: Any) -> list[str]:
    """Delete the matching credentials and what hangs on them (their idempotency
    records; their stream tickets go by ON DELETE CASCADE); their hashes."""
    hashes = list(session.exec(select(Credential.token_hash).where(where)).all())
    if hashes:
        session.connection().execute(delete(IdempotencyRecord).where(col(IdempotencyRecord.token_hash).in_(hashes)))
        session.connection().execute(delete(Credential).where(col(Credential.token_hash).in_(hashes)))
    return hashes


def _revoke_player(session: Session, player_id: str) -> list[str]:
    """Every credential the player holds (its token, those its invitations gave) and its pending
    invitations deleted (a revoked player's link must not mint a credential); the credentials' hashes."""
    dead = _drop_credentials(session, Credential.player_id == player_id)
    session.connection().execute(delete(Invite).where(col(Invite.player_id) == player_id))
    return dead


def _new_credential(session: Session, campaign_id: str, role: str, player_id: str | None = None) -> str:
    token = new_token("gm" if role == "gm" else "pl")
    session.add(Credential(token_hash=hash_token(token), campaign_id=campaign_id, player_id=player_id, role=role))
    return token


def _commit_forgetting(session: Session, dead: list[str]) -> None:
    session.commit()
    forget(dead)  # this process at once; the others at the dead token's next request (auth.verify)


def rotate_gm_token(session: Session, principal: Principal, campaign_id: str) -> dict[str, str]:
    """GM: a new GM token; the old one (the caller's) is dead when this commits."""
    load_campaign(session, principal, campaign_id, for_update=True)
    dead = _drop_credentials(session, (Credential.campaign_id == campaign_id) & (Credential.role == "gm"))
    token = _new_credential(session, campaign_id, "gm")
    _commit_forgetting(session, dead)
    return {"gm_token": token}


def _load_player(session: Session, principal: Principal, campaign_id: str, player_id: str, action: str) -> Player:
    load_campaign(session, principal, campaign_id, for_update=True)
    player = session.get(Player, player_id)
    if player is None or player.campaign_id != campaign_id:
        raise NotFound("no player with this id")
    return player


def rotate_player_token(session: Session, principal: Principal, campaign_id: str, player_id: str) -> dict[str, str]:
    """GM: a new token for a player; every credential it holds (its token, those its invitations
    gave) is dead when this commits, and its pending invitations too."""
    _load_player(session, principal, campaign_id, player_id, "rotate a player's token")
    dead = _revoke_player(session, player_id)
    token = _new_credential(session, campaign_id, "player", player_id)
    _commit_forgetting(session, dead)
    return {"token": token}


def delete_player(session: Session, principal: Principal, campaign_id: str, player_id: str) -> None:
    """GM: the player and its token go; its characters stay, owned by nobody (the GM's): each is
    saved so (its version moves, and that of each fight showing it) and told as `character.updated`
    (`characters.orphan`), then `player.deleted` tells every member. One unit of work: all or nothing."""
    with UnitOfWork(session, campaign_id) as uow:
        player = _load_player(session, principal, campaign_id, player_id, "remove a player")
        dead = _revoke_player(session, player_id)
        orphan(uow, player_id)
        uow.publish()  # its characters told (and their fights moved) before `player.deleted`
        session.delete(player)
        uow.record("player.deleted", {"id": player_id})  # after its characters' events
        uow.commit()
    forget(dead)  # this process at once; the others at the dead token's next request (auth.verify)


_DELETION_LOCKS = (  # in the writers' order (see `locks`), after the campaign's NO KEY UPDATE
    select(Encounter.id).where(col(Encounter.campaign_id) == bindparam("cid")).order_by(Encounter.id).with_for_update(),
    select(Character.id).where(col(Character.campaign_id) == bindparam("cid")).order_by(Character.id).with_for_update(),
    # the current dice epoch: a writer takes it after its characters (with its opening, its
    # encounter's load or at its first server die)
    select(DiceEpoch.id).where(col(DiceEpoch.campaign_id) == bindparam("cid")).order_by(DiceEpoch.id).with_for_update(),
    select(Campaign.id).where(col(Campaign.id) == bindparam("cid")).with_for_update(),
)


def _lock_for_deletion(session: Session, campaign_id: str) -> None:
    """Every row a writer of the campaign locks, in the writers' order, then the campaign's row
    FOR UPDATE: a writer that holds a row of them finishes first (it waits for
    nothing the deletion holds), a later one waits for the deletion and then finds nothing (404),
    and no child insert slips in between the deletion's statements (its foreign key waits)."""
    for statement in _DELETION_LOCKS:
        session.connection().execute(statement, {"cid": campaign_id})


def delete_campaign(session: Session, principal: Principal, campaign_id: str, if_match: str | None) -> None:
    """GM: the campaign and everything of it, children first, in one transaction."""
    campaign = load_campaign(session, principal, campaign_id, for_update=True)
    check_if_match(campaign.version, if_match, "campaign")
    _lock_for_deletion(session, campaign_id)
    dead = _drop_credentials(session, Credential.campaign_id == campaign_id)
    ids = {"cid": campaign_id}
    encounters = select(Encounter.id).where(col(Encounter.campaign_id) == bindparam("cid")).scalar_subquery()
    log = select(LogEntry.seq).where(col(LogEntry.campaign_id) == bindparam("cid")).scalar_subquery()
    for statement in (
        delete(Event).where(col(Event.campaign_id) == bindparam("cid")),
        # its events' counter: a writer holding it holds a row of `_DELETION_LOCKS` (or the campaign's
        # NO KEY UPDATE), so the deletion, past those, finds it free
        delete(EventCounter).where(col(EventCounter.campaign_id) == bindparam("cid")),
        delete(EncounterAction).where(col(EncounterAction.encounter_id).in_(encounters)),
        delete(Combatant).where(col(Combatant.encounter_id).in_(encounters)),
        delete(Encounter).where(col(Encounter.campaign_id) == bindparam("cid")),
        delete(LogEntryCharacter).where(col(LogEntryCharacter.seq).in_(log)),
        delete(LogEntry).where(col(LogEntry.campaign_id) == bindparam("cid")),
        delete(DiceEpoch).where(col(DiceEpoch.campaign_id) == bindparam("cid")),
        delete(Character).where(col(Character.campaign_id) == bindparam("cid")),
        delete(Invite).where(col(Invite.campaign_id) == bindparam("cid")),
        delete(Player).where(col(Player.campaign_id) == bindparam("cid")),
        delete(Campaign).where(col(Campaign.id) == bindparam("cid")),
    ):
        session.connection().execute(statement, ids)
    _commit_forgetting(session, dead)


# --- invitations (API.md "Joining a table with a link"): a single-use link mints a player's credential ---

_invite = core_table(Invite)
_SPEND = (
    delete(_invite)
    .where(_invite.c.code_hash == bindparam("code_hash"))
    .returning(_invite.c.campaign_id, _invite.c.player_id, _invite.c.expires_at)
)


def create_invite(
    session: Session, principal: Principal, campaign_id: str, player_id: str, data: InviteCreate, base_url: str
) -> dict[str, Any]:
    """GM: a single-use invitation of one of the campaign's players, valid `expires_in` seconds.
    Its code (256 random bits) is returned once; only its hash is stored. Expired ones are swept here."""
    _load_player(session, principal, campaign_id, player_id, "invite a player")
    now = utcnow()
    code = secrets.token_urlsafe(32)
    expires_at = now + timedelta(seconds=data.expires_in)
    conn = session.connection()
    conn.execute(delete(_invite).where(_invite.c.expires_at < now))
    conn.execute(
        insert(_invite),
        {
            "code_hash": hash_token(code),
            "campaign_id": campaign_id,
            "player_id": player_id,
            "expires_at": expires_at,
            "created_at": now,
        },
    )
    session.commit()
    url = f"{base_url.rstrip('/')}/join#{code}"
    return {"code": code, "url": url, "expires_at": expires_at, "qr_svg": qr_svg(url)}


def qr_svg(text: str) -> str:
    """`text` as a QR code, a standalone SVG document (segno: medium error correction, its 4-module
    quiet zone, black on white, sized by its `viewBox` only, so a page scales it with CSS)."""
    out = io.BytesIO()
    segno.make(text, error="m", micro=False).save(
        out,
        kind="svg",
        xmldecl=False,
        svgns=True,
        nl=False,
        omitsize=True,
        dark="#000",
        light="#fff",
        svgclass=None,
        lineclass=None,
    )
    return out.getvalue().decode("ascii")


def accept_invite(session: Session, code: str) -> dict[str, str]:
    """A new credential of the invited player; the invitation is spent (one DELETE … RETURNING: of
    two concurrent accepts, on any workers, one gets it). The campaign's row is locked first, as a
    rotation or a removal of the player takes it (`_load_player`): either they run first
    and the invitation is gone, or they come after and revoke the credential made here.
    404 alike when the code is unknown, spent or expired."""
    code_hash = hash_token(code)
    conn = session.connection()
    campaign_id = conn.execute(select(_invite.c.campaign_id).where(_invite.c.code_hash == code_hash)).scalar()
    if campaign_id is not None:
        session.get(Campaign, campaign_id, with_for_update=NO_KEY_UPDATE)
    row = conn.execute(_SPEND, {"code_hash": code_hash}).first()
    if row is None or as_utc(row.expires_at) <= utcnow():
        session.commit()  # an expired one is spent all the same
        raise NotFound("no such invitation: unknown, already used or expired")
    token = _new_credential(session, row.campaign_id, "player", row.player_id)
    session.commit()
    return {"token": token, "player_id": row.player_id, "campaign_id": row.campaign_id}
