"""A pytest-ssd suite; a package, so that its test modules' names are its own.

The qualification suite: one test module per concern (data integrity, power loss, admin
commands under load, declared features, namespaces, devices); see docs/qual.md.
"""
