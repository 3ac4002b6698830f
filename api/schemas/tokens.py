"""The API's bearer tokens as `GET /v1/tokens` lists them (never the secrets)."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, Field

from railtrace.api.tokens import TokenInfo


class TokenOut(BaseModel):
    """A token as an admin sees it: never the secret, nor its digest."""

    id: str = Field(description="The token's public id, the part after `rt_`.")
    name: str
    scopes: list[Literal["read", "admin"]]
    created_at: str
    expires_at: str | None

    @classmethod
    def from_record(cls, t: TokenInfo) -> TokenOut:
        return cls(
            id=t.token_id,
            name=t.name,
            scopes=cast(list[Literal["read", "admin"]], sorted(t.scopes)),
            created_at=t.created_at.isoformat(),
            expires_at=None if t.expires_at is None else t.expires_at.isoformat(),
        )


class TokenListOut(BaseModel):
    tokens: list[TokenOut]
