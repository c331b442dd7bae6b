"""The package list, derived rather than typed (the rest of the metadata is in pyproject.toml).

pyproject's `[tool.setuptools.packages.find]` cannot put a prefix on what it
finds, and the product card fixes the layout: the package's code lives in
compiler/ and its data in grammar/, templates/ and spec/ beside it, mapped into
``effspec`` by ``package-dir`` (pyproject.toml).  So every folder of compiler/
holding an ``__init__.py`` is a subpackage ``effspec.<folder>``, and every
folder under a data package is a data subpackage (``effspec.templates.fonts``,
``effspec.spec.rules``), which setuptools wants listed to ship its files.  A new
stage, rule family or data folder needs no edit here.
"""

from setuptools import find_namespace_packages, find_packages, setup

DATA = {"effspec.grammar": "grammar", "effspec.templates": "templates", "effspec.spec": "spec"}

packages = ["effspec", *(f"effspec.{name}" for name in find_packages("compiler"))]
for package, folder in DATA.items():
    packages += [package, *(f"{package}.{name}" for name in find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"]))]

setup(packages=packages)
