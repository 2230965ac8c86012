"""Kernels, one module per family of ops (registered with registry.kernel)."""
