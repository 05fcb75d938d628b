"""``/v1/patterns``: browse and search the KB, both languages in every answer."""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Query, Request

from indexer.schema import Component, Role, Severity
from service.http.catalog import Catalog, detail
from service.http.errors import ApiError
from service.http.responses import JSONBytes

router = APIRouter(prefix="/v1", tags=["knowledge base"])


def catalog(request: Request) -> Catalog:
    return request.app.state.catalog


@router.get("/patterns", summary="List and search KB entries")
async def list_patterns(
    request: Request,
    q: str = Query("", max_length=500, description="words that must all appear (id, titles, explanations, examples; en or zh)"),
    component: Optional[Component] = Query(None, description="only entries printed by this component"),
    severity: Optional[Severity] = Query(None),
    role: Optional[Role] = Query(None),
) -> JSONBytes:
    return JSONBytes(catalog(request).search(
        q,
        component.value if component else None,
        severity.value if severity else None,
        role.value if role else None,
    ))


@router.get("/patterns/{pattern_id}", summary="One KB entry in full: texts, fields, examples, source, references")
async def get_pattern(request: Request, pattern_id: str) -> JSONBytes:
    entry = catalog(request).by_id.get(pattern_id)
    if entry is None:
        raise ApiError(404, "unknown_pattern", f"no KB entry has the id {pattern_id!r}")
    return JSONBytes(detail(entry))
