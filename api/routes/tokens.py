"""Token management for admins: see who can read the API, and revoke a leaked token."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, HTTPException, Path, Request, Response

from railtrace.api.schemas import TokenListOut, TokenOut
from railtrace.api.tokens import TokenBook

router = APIRouter(prefix="/v1/tokens", tags=["tokens"])

TokenId = Annotated[
    str, Path(pattern=r"^[0-9a-f]{12}$", description="The token's id, as `GET /v1/tokens` lists.")
]


def _book(request: Request) -> TokenBook:
    return cast(TokenBook, request.app.state.tokens)


@router.get("")
def list_tokens(request: Request) -> TokenListOut:
    """Every token, oldest first, without secrets."""
    return TokenListOut(tokens=[TokenOut.from_record(t) for t in _book(request).tokens()])


@router.delete(
    "/{token_id}",
    status_code=204,
    response_class=Response,
    responses={404: {"description": "No token with this id."}},
)
def revoke_token(request: Request, token_id: TokenId) -> Response:
    """Revoke a token at once, for this API and every other one reading the same file."""
    if _book(request).revoke(token_id) is None:
        raise HTTPException(status_code=404, detail=f"no token '{token_id}'")
    return Response(status_code=204)
