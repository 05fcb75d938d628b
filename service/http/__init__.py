"""The HTTP service and web page (``explainlog serve``): FastAPI + uvicorn over the explainer.

Module map: ``settings`` (flags/env), ``app`` (factory), ``routes_*`` (one file per API area),
``requests``/``upload_stream`` (turn bodies into checked lines), ``metrics``, ``pages`` and
``static/`` (the page). Import ``service.http.app.create_app``; this package itself imports
nothing heavy so the CLI stays quick.
"""
