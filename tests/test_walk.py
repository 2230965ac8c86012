"""miltext.ir.walk: every block and op in program order, nested ones included, at any depth."""
import glob
import os

import miltext
from miltext.ir import Block, Function, Operation, Program, Var
from miltext.ir.walk import blocks, operations

ROOT = os.path.dirname(os.path.abspath(__file__))
NESTED = [p for p in sorted(glob.glob(os.path.join(ROOT, "check_cases", "*.mil")))
          if "while_loop" in open(p, encoding="utf-8").read() or "cond(" in open(p, encoding="utf-8").read()]


def _ops_in_text_order(block):
    for op in block.operations:
        yield op
        for inner in op.blocks:
            yield from _ops_in_text_order(inner)


def test_the_walk_meets_ops_and_blocks_in_the_order_the_text_writes_them():
    assert NESTED, "the check cases hold programs with nested blocks"
    for path in NESTED:
        program = miltext.load(path)
        tops = [b for fn in program.functions.values() for b in fn.blocks.values()]
        ops = list(operations(program))
        assert [id(op) for op in ops] == [id(op) for top in tops for op in _ops_in_text_order(top)], path
        # each block once, a block before the blocks its ops own
        found = list(blocks(program))
        assert len({id(b) for b in found}) == len(found) == len(tops) + sum(len(op.blocks) for op in ops)
        seen = set()
        for b in found:
            seen.add(id(b))
            assert all(id(inner) not in seen for op in b.operations for inner in op.blocks)
        # the same walk from a function, a block, an op and a fragment of ops
        fn = next(iter(program.functions.values()))
        assert list(operations(fn)) == [op for b in fn.blocks.values() for op in _ops_in_text_order(b)]
        owner = next(op for op in ops if op.blocks)
        assert list(operations(owner)) == [o for b in owner.blocks for o in _ops_in_text_order(b)]
        assert list(operations([owner])) == [owner, *operations(owner)]


def test_a_walk_thousands_of_blocks_deep_needs_no_recursion():
    depth = 5000
    inner = Block(operations=[Operation("relu", {"x": ["x"]}, [Var("leaf")])], outputs=["leaf"])
    for _ in range(depth):
        inner = Block(operations=[Operation("cond", {"pred": ["p"]}, [Var("y")], blocks=[inner])], outputs=["y"])
    program = Program({"main": Function(opset="CoreML7", blocks={"CoreML7": inner})})
    assert len(list(blocks(program))) == depth + 1
    ops = list(operations(program))
    assert len(ops) == depth + 1 and ops[-1].type == "relu"
