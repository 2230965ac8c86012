"""Kernels, one module per op family (names: miltext/op_families.py), registered with
registry.kernel."""
