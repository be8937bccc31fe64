"""Adversarial tests: one module per class of hole, each generating variants."""
