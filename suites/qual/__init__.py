"""The qualification suite: what a firmware build must show beyond its speed (one module a
concern; each concern's code is its method folder under ``pytest_ssd/methods/``)."""
