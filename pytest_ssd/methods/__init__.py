"""Method drivers: the steps of a suite's method run on the ``ssd`` fixture.

esd sweeps, SNIA PTS rounds, WSAT; the suites call them, their graphs come from
:mod:`pytest_ssd.figures`.
"""
