"""MIL texts that several test modules share."""

# Canonical text with cond and while_loop blocks (the LSP tests).
GOOD = """main[CoreML7](%x: (1, 2, fp32),
              %p: (bool)) {
  block0() {
    %c: (1, 2, fp32) = cond(pred=%p, name="c")
      block1() {
        %two: (fp32) = const(val=2.0, name="two")
        %t: (1, 2, fp32) = mul(x=%x, y=%two, name="t")
      } -> (%t)
      block2() {
        %r: (1, 2, fp32) = relu(x=%x, name="r")
      } -> (%r)
    %i0: (int32) = const(val=0, name="i0")
    %out: (1, 2, fp32), %n: (int32) = while_loop(loop_vars=(%c, %i0), name="loop")
      block3(%lx: (1, 2, fp32), %li: (int32)) {
        %go: (bool) = less(x=%li, y=10, name="go")
      } -> (%go)
      block4(%lx: (1, 2, fp32), %li: (int32)) {
        %nx: (1, 2, fp32) = add(x=%lx, y=%x, name="nx")
        %ni: (int32) = add(x=%li, y=1, name="ni")
      } -> (%nx, %ni)
  } -> (%out, %n)
}
"""

# The shorthand (types left out); a model in Apple's model.mil dialect.
SHORT = """main[CoreML7](%x: (2, 4, fp32)) {
  block0() {
    %a = relu(x=%x)
    %b = add(x=%a, y=%a)
    %c: (2, 4, fp32) = mul(x=%b, y=%a)
  } -> (%c)
}
"""

MODELMIL = """program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremltools-version", "8.1"}})]
{
    func main<ios17>(tensor<fp16, [1, 10]> x, tensor<fp16, [1, 10]> y) {
            tensor<fp16, [1, 10]> prod = mul(x = x, y = y)[name = tensor<string, []>("prod")];
            tensor<fp16, [1, 10]> out = add(x = prod, y = x)[name = tensor<string, []>("out")];
        } -> (out);
}
"""

# cond and while_loop blocks reading the input %x (made by coremltools' builder, then printed).
NESTED = """main[CoreML7](%x: (1, 2, fp32),
              %pred: (1, int32)) {
  block0() {
    %squeeze_0: (int32) = squeeze(x=%pred, name="squeeze_0")
    %zero: (int32) = const(val=0, name="zero")
    %flag: (bool) = greater(x=%squeeze_0, y=%zero, name="flag")
    %cond_0: (1, 2, fp32) = cond(pred=%flag, name="cond_0")
      block1() {
        %mul_0_y_0: (fp32) = const(val=2.0, name="mul_0_y_0")
        %mul_0: (1, 2, fp32) = mul(x=%x, y=%mul_0_y_0, name="mul_0")
      } -> (%mul_0)
      block2() {
        %relu_0: (1, 2, fp32) = relu(x=%x, name="relu_0")
      } -> (%relu_0)
    %loop_init: (int32) = const(val=0, name="loop_init")
    %count: (int32), %total: (1, 2, fp32) = while_loop(loop_vars=(%loop_init, %cond_0), name="while_loop_0")
      block3(%i: (int32), %acc: (1, 2, fp32)) {
        %five: (int32) = const(val=5, name="five")
        %less_1: (bool) = less(x=%i, y=%five, name="less_1")
      } -> (%less_1)
      block4(%i: (int32), %acc: (1, 2, fp32)) {
        %one: (int32) = const(val=1, name="one")
        %add_2: (int32) = add(x=%i, y=%one, name="add_2")
        %add_3: (1, 2, fp32) = add(x=%acc, y=%x, name="add_3")
      } -> (%add_2, %add_3)
  } -> (%total)
}
"""
