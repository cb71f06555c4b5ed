"""The consumer method's numbers from its measurements: low QD by read share (:mod:`.lowqd`).

The fill drive's and the speed profile's are shared (:mod:`pytest_ssd.analysis`: WSAT reads
fio's logs the same way).
"""
