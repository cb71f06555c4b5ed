"""Workload rules every method shares: what a drive cannot take, and why (:mod:`.limits`).

A method's own fio jobs are in its folder (``pytest_ssd/methods/<method>/workloads``).
"""
