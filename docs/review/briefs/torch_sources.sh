#!/bin/bash
# Unpacks the torch/*.py files of each PyTorch release from its macOS wheel on PyPI (small, no
# CUDA libraries) into /tmp/src/torchpy/<version>, for reviewers reading the Python code at a tag.
mkdir -p /tmp/src/torchwhl /tmp/src/torchpy && cd /tmp/src/torchwhl || exit 1
PIP=${PIP:-/work/main/.venv/bin/pip}
for v in 1.9.0 1.9.1 1.10.0 1.10.1 1.10.2 1.11.0 1.12.0 1.12.1 1.13.0 1.13.1 2.0.0 2.0.1 2.1.0 2.1.1 2.1.2 2.2.0 2.2.1 2.2.2 2.3.0 2.3.1 2.4.0 2.4.1 2.5.0 2.5.1 2.6.0 2.7.0 2.7.1 2.8.0 2.9.0 2.9.1 2.10.0 2.11.0 2.12.0 2.13.0 2.14.0 2.14.1 2.15.0; do
  [ -d /tmp/src/torchpy/$v ] && continue
  ok=
  for py in 3.11 3.12 3.9 3.8; do
    "$PIP" download --quiet torch==$v --no-deps --only-binary=:all: --platform macosx_11_0_arm64 --python-version $py -d . >/dev/null 2>&1 && ok=1 && break
    "$PIP" download --quiet torch==$v --no-deps --only-binary=:all: --platform macosx_14_0_arm64 --python-version $py -d . >/dev/null 2>&1 && ok=1 && break
    "$PIP" download --quiet torch==$v --no-deps --only-binary=:all: --platform macosx_10_9_x86_64 --python-version $py -d . >/dev/null 2>&1 && ok=1 && break
  done
  w=$(ls torch-$v-*.whl 2>/dev/null | head -1)
  if [ -z "$w" ]; then echo "$v: none"; continue; fi
  mkdir -p /tmp/src/torchpy/$v && unzip -q -o "$w" 'torch/*.py' 'torch/**/*.py' -d /tmp/src/torchpy/$v 2>/dev/null
  echo "$v: $(find /tmp/src/torchpy/$v -name '*.py' | wc -l) py"
done
