"""Where a model's numbers go wrong."""
