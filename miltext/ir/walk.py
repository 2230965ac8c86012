"""Walking a program: every block and every op, nested ones included, in program order (a
block's op before the ops of the blocks it owns, the functions' blocks as their dicts hold
them). The walk keeps its own stack, so depth costs no recursion.

`root` is a Program, a Function, a Block, an Operation (then its blocks, not the op itself),
or a list of ops (a fragment: those ops and their blocks).
A pass that needs what each block sees (scoping) walks with miltext.ir.scopes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # known by their fields: the walk imports no class (textconv stays light)
    from .program import Block, Operation


def top_blocks(root) -> list:
    """The outermost blocks of `root` (a fragment's: the blocks of its ops)."""
    if isinstance(root, list):
        return [b for op in root for b in op.blocks]
    if hasattr(root, "functions"):                  # a Program
        return [b for fn in root.functions.values() for b in fn.blocks.values()]
    if hasattr(root, "operations"):                 # a Block
        return [root]
    if isinstance(root.blocks, dict):               # a Function: its blocks by opset
        return list(root.blocks.values())
    return list(root.blocks)                        # an Operation (or a compact one)


def blocks(root) -> Iterator[Block]:
    """Every block of `root`, a block before the blocks of its ops."""
    return _preorder(top_blocks(root), lambda block: (inner for op in block.operations for inner in op.blocks))


def operations(root) -> Iterator[Operation]:
    """Every op of `root`, an op before the ops of the blocks it owns."""
    top = root if isinstance(root, list) else [op for block in top_blocks(root) for op in block.operations]
    return _preorder(top, lambda op: (inner for block in op.blocks for inner in block.operations))


def _preorder(items, children) -> Iterator:
    """`items`, each followed by what `children(item)` gives, and so on down, depth first."""
    stack = [iter(items)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        yield item
        stack.append(children(item))


__all__ = ["top_blocks", "blocks", "operations"]
