"""Native inference rules, one module per op family (the module's name is the family's)."""
