"""Maps the repo's top-level folders into the one `railtrace` import namespace.

The repo keeps `topology/`, `streams/`, `api/` and `proto/` at the top level (as the team asked),
while everything installs as `railtrace.<part>`. Listing subpackages by hand is how a wheel
silently loses one, so every folder holding an `__init__.py` under a mapped root is found here.
"""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "railtrace": "railtrace",
    "railtrace.topology": "topology",
    "railtrace.streams": "streams",
    "railtrace.api": "api",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in ROOTS.items():
        package_dir[name] = folder
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder)
            packages.append(".".join([name, *rel.parts]) if rel.parts else name)
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()

setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data={"railtrace": ["schema/*.sql", "web/*"], "railtrace.api": ["static/*"]},
    include_package_data=True,
)
