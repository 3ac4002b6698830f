"""A browser session for the incident pages: a token pasted once serves every tab.

The pages kept the token in one tab's session storage, so each new tab, and so each click in a
Slack alert, asked for it again. `POST /v1/session` with a bearer token answers with a session
cookie holding it (see `railtrace.api.auth` for why it is HttpOnly, SameSite=Strict and
honoured for reads only); the browser sends it from every tab until it closes, or until
`DELETE /v1/session`. Secure when the API was reached over HTTPS (directly, or through a
proxy uvicorn trusts with X-Forwarded-Proto), so it never leaves such a browser in clear.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response, Security
from fastapi.security import HTTPAuthorizationCredentials

from railtrace.api.auth import SESSION_COOKIE, bearer, require
from railtrace.api.schemas import ErrorOut
from railtrace.api.tokens import Scope

router = APIRouter(prefix="/v1/session", tags=["session"])


@router.post(
    "",
    status_code=204,
    response_class=Response,
    dependencies=[Security(require(Scope.READ))],
    responses={
        401: {"model": ErrorOut, "description": "No bearer token, or one unknown or revoked."},
        403: {"model": ErrorOut, "description": "The token lacks the read scope."},
        503: {"model": ErrorOut, "description": "The tokens file is unavailable."},
    },
)
def start_session(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> Response:
    """Set this browser's session cookie from the bearer token (a read token at least): the
    incident pages then read the API from any tab without asking for it again."""
    assert credentials is not None  # `require` let the request through with a bearer token
    response = Response(status_code=204)
    response.set_cookie(
        SESSION_COOKIE,
        credentials.credentials,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.delete("", status_code=204, response_class=Response)
def end_session(request: Request) -> Response:
    """Forget this browser's session cookie (no token needed: it only ends the caller's own
    session). The token itself stays valid; `railtrace token revoke` ends it everywhere."""
    response = Response(status_code=204)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
