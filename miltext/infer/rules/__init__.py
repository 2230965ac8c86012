"""Native inference rules, one module per op family (names: miltext/op_families.py; the
module's name is the family's)."""
