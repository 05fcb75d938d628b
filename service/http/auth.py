"""Optional bearer token for ``/v1/*``: a shared service on a cluster network may want one.

Compared in constant time; the page and the health/metrics endpoints stay open (the page asks
the user for the token when the API answers 401).
"""

from __future__ import annotations

import hmac

from fastapi import Request

from service.http.errors import ApiError


async def require_token(request: Request) -> None:
    expected = request.app.state.service.settings.api_token
    if not expected:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise ApiError(
            401, "unauthorized", "this service requires 'Authorization: Bearer <token>' on /v1/* requests",
            headers={"WWW-Authenticate": "Bearer"},
        )
