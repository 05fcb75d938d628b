"""The one native part: ``service.batch._shape_tally``, the summary's counting pass.

Optional: where no C compiler is found the build goes on without it and the batch engine
uses its Python equivalent (same results, about 4x slower on ``--format summary``).
Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "service.batch._shape_tally",
            ["service/batch/_shape_tally.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
