"""Every folder under suites/ is a pytest-ssd suite.

Running one (``pytest suites/smoke``) activates the plugin: without ``--dut`` it
benchmarks a scratch loop device.  Test runs elsewhere (``pytest tests``) are
left alone unless they give ``--dut``.
"""

pytest_ssd_suite = True
