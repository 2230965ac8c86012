"""The lowerings of MIL ops to the coreai dialect, one module per op family (op_families.py)."""
