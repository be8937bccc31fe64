"""What attacks or demonstrates the gate: the reviewer simulator, the fault proxy, the selftest.

The core never imports it (docs/design.md's dependency order).
"""
