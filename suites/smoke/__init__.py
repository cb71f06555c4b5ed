"""A pytest-ssd suite; a package, so that its test modules' names are its own.

`pytest suites` collects every suite at once: csd and snia both have a test_latency.py.
"""
