"""Bearer-token checks for every route but health, as FastAPI security dependencies.

Declared through `HTTPBearer`, so the OpenAPI document says which routes need a token and
clients generated from it (and schemathesis) send one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, cast

from fastapi import HTTPException, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from railtrace.api.tokens import Scope, TokenBook, TokenFileError, TokenInfo

log = logging.getLogger(__name__)

bearer = HTTPBearer(
    auto_error=False,
    description="A token from `railtrace token create`; the scopes are read and admin.",
)

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail, headers=_CHALLENGE)


def require(scope: Scope) -> Callable[..., TokenInfo]:
    """A dependency that lets a request through only with a live token holding `scope`."""

    def check(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    ) -> TokenInfo:
        book = cast(TokenBook, request.app.state.tokens)
        if credentials is None:
            raise _unauthorized(
                "this route needs 'Authorization: Bearer <token>'; "
                "create a token with `railtrace token create --name <who> --scope read`"
            )
        try:
            info = book.check(credentials.credentials)
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
