"""The text door: MIL text parsing (parser) and canonical printing (printer)."""
