# explainlog HTTP service: CPU-only, the bundled MiniLM model, the semantic index built at
# image build time, served as a non-root user.
#
#   docker build -t explainlog .
#   docker run --rm -p 8000:8000 explainlog          # then open http://localhost:8000/
#
# Build args: PYTHON_IMAGE (any Debian-based Python 3.11 image), TORCH_INDEX_URL (where the
# CPU torch wheel comes from; PyPI's default torch is the multi-GB CUDA build).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH
# CPU torch first, pinned, so nothing later can pull a CUDA build.
RUN python -m venv /opt/venv \
 && pip install --index-url "${TORCH_INDEX_URL}" --extra-index-url https://pypi.org/simple torch==2.13.0
# setup.py: the optional C extension of batch summaries; without a compiler (slim images)
# the install goes on without it, and the HTTP service never uses it.
COPY pyproject.toml setup.py README.md /src/
COPY indexer /src/indexer
COPY service /src/service
RUN pip install "/src[serve]"
# The KB is validated and embedded here, once: containers start without rebuilding anything.
COPY kb /app/kb
RUN explainlog --kb /app/kb kb check \
 && explainlog --kb /app/kb --index /app/index index build

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 explainlog \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /app --shell /usr/sbin/nologin explainlog
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    EXPLAINLOG_KB=/app/kb \
    EXPLAINLOG_INDEX=/app/index \
    EXPLAINLOG_HOST=0.0.0.0 \
    EXPLAINLOG_PORT=8000
WORKDIR /app
# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8000
# Ready = the index is loaded and matches the KB (MiniLM runs in numpy: no torch load at start).
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('EXPLAINLOG_PORT', '8000'), timeout=4)"]
# 'refuse': the index was built above; never try to rebuild it in a read-only image.
CMD ["explainlog", "--index-policy", "refuse", "serve"]
