"""The package list, which pyproject.toml cannot express: every package under wvformats/ (a new format family
is found without editing anything), and schemas/ installed as wvformats.schemas. The rest is pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["wvformats", "wvformats.*"]), "wvformats.schemas",
              *(f"wvformats.schemas.{p}" for p in find_packages("schemas"))],
    package_dir={"wvformats.schemas": "schemas"},
)
