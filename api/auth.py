"""Token checks for every route but health, as FastAPI security dependencies.

A token comes as a bearer header, or (for the incident pages) as the session cookie that
`POST /v1/session` sets from one: HttpOnly, so the page's script never holds the token, and
SameSite=Strict, so another site's page cannot make the browser send it. The cookie is
honoured for reads only (GET, HEAD): a request that changes something (revoking a token)
needs the header, which no other site can make a browser add, so a forged cross-site form or
request gets nowhere even in a browser that ignores SameSite. The cookie holds the token
itself and is checked against the same token book, so a revoked or expired token stops
working for it at once too.

Declared through `HTTPBearer` and `APIKeyCookie`, so the OpenAPI document says which routes
need a token and clients generated from it (and schemathesis) send one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, cast

from fastapi import HTTPException, Request, Security
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from railtrace.api.tokens import Scope, TokenBook, TokenFileError, TokenInfo

log = logging.getLogger(__name__)

bearer = HTTPBearer(
    auto_error=False,
    description="A token from `railtrace token create`; the scopes are read and admin.",
)

#: The session cookie's name; its value is a token, as the bearer header carries it.
SESSION_COOKIE = "railtrace_session"

#: The methods the session cookie is honoured for: those that change nothing.
COOKIE_METHODS = frozenset({"GET", "HEAD"})

session_cookie = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    description="Set by `POST /v1/session` from a token, for the incident pages; honoured for "
    "GET and HEAD only.",
)

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail, headers=_CHALLENGE)


def require(scope: Scope) -> Callable[..., TokenInfo]:
    """A dependency that lets a request through only with a live token holding `scope`."""

    def check(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
        cookie: Annotated[str | None, Security(session_cookie)],
    ) -> TokenInfo:
        book = cast(TokenBook, request.app.state.tokens)
        if credentials is not None:
            token = credentials.credentials
        elif cookie and request.method in COOKIE_METHODS:
            token = cookie
        else:
            raise _unauthorized(
                "this route needs 'Authorization: Bearer <token>'; "
                "create a token with `railtrace token create --name <who> --scope read`"
            )
        try:
            info = book.check(token)
        except TokenFileError as exc:
            # Fail closed, and say so: a broken file must not let everyone in.
            log.error("tokens file unreadable", extra={"reason": str(exc)})
            raise HTTPException(
                status_code=503, detail="the API's tokens file is unreadable"
            ) from exc
        if info is None:
            raise _unauthorized("unknown, revoked or expired token")
        if not info.allows(scope):
            raise HTTPException(
                status_code=403,
                detail=f"token '{info.token_id}' ({info.name}) lacks the '{scope}' scope",
            )
        request.state.token_id = info.token_id
        return info

    return check


ReadToken = Annotated[TokenInfo, Security(require(Scope.READ))]
AdminToken = Annotated[TokenInfo, Security(require(Scope.ADMIN))]
