"""The Python API's modules; the public names are `official_electra`'s
(see official_electra/__init__.py and docs/python_api.md)."""
