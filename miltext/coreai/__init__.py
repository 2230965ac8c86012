"""miltext port: a MIL program lowered to Core AI's `coreai` MLIR dialect, saved as an
`.aimodel` with coreai-core, and checked against miltext's interpreter.

The room has one job per module: `mlir` spells types and constants, `lower` walks a function
and folds what is known before it runs, `table` holds the lowering of each MIL op (one module
per op family under `lowerings/`), `runtime` is the only door to coreai-core (an optional
extra), `verify` runs both sides. Nothing here is imported by `import miltext`."""
