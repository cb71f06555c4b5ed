"""The qualification suite (docs/qual.md): every test records its checks as
``qualification`` records (part, check, pass / fail / not judged, one line), which the
report's "Qualification" section lists per drive and ``pytest-ssd compare --gate`` judges.

Named here, so that a copy of the folder run from elsewhere is still the suite ``qual``.
"""

pytest_ssd_suite = "qual"
