"""Device state: what a test needs, what the device is in, the steps between (METHOD §3)."""
