"""The web page, the KB browser and the API docs — all served from this package, no CDN.

The pages are plain HTML/CSS/JS in ``static/`` (no build step) and must work in an air-gapped
cluster, so a strict Content-Security-Policy allows nothing but this origin. FastAPI's default
``/docs`` loads Swagger UI from a CDN; here it is served from the copy that the
``fastapi-offline`` package ships. (Its ReDoc copy is not offered: ReDoc fetches its logo
from a CDN at run time.)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import FileResponse, HTMLResponse

STATIC_DIR = Path(__file__).resolve().parent / "static"
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers=PAGE_HEADERS)


@router.get("/kb")
async def kb_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "kb.html", headers=PAGE_HEADERS)


def _docs_assets() -> Path:
    return Path(str(resources.files("fastapi_offline") / "static"))


def install_pages(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.mount("/docs-assets", StaticFiles(directory=_docs_assets()), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{app.title} — API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js", swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )
