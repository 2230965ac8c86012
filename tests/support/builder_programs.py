"""Small real programs written with coremltools' MIL builder (no torch): an MLP, a CNN, an
attention block, an LSTM, control flow, state, assorted ops and a flexible shape. Each is a
function that returns (pymil program, deployment target); coremltools is imported inside."""
import numpy as np


def programs() -> dict:
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import get_new_symbol, types

    rng = np.random.RandomState(0)

    def w(*shape):
        return (rng.randn(*shape) * 0.1).astype(np.float32)

    found = {}

    @mb.program(input_specs=[mb.TensorSpec((1, 8))], opset_version=ct.target.iOS17)
    def mlp(x):
        h = mb.relu(x=mb.linear(x=x, weight=w(16, 8), bias=w(16)))
        h = mb.softmax(x=mb.linear(x=h, weight=w(4, 16), bias=w(4)), axis=-1)
        return mb.leaky_relu(x=h, alpha=0.1)
    found["mlp"] = (mlp, ct.target.iOS17)

    @mb.program(input_specs=[mb.TensorSpec((1, 3, 32, 32))], opset_version=ct.target.iOS17)
    def cnn(x):
        y = mb.conv(x=x, weight=w(16, 3, 3, 3), bias=w(16), pad_type="same", strides=[1, 1])
        y = mb.batch_norm(x=y, mean=w(16), variance=np.abs(w(16)) + 1, gamma=w(16), beta=w(16))
        y = mb.relu(x=y)
        y = mb.conv(x=y, weight=w(16, 1, 3, 3), groups=16, pad_type="custom", pad=[1, 1, 1, 1])
        y = mb.max_pool(x=y, kernel_sizes=[2, 2], strides=[2, 2], pad_type="valid")
        y = mb.conv_transpose(x=y, weight=w(16, 8, 2, 2), strides=[2, 2])
        y = mb.avg_pool(x=y, kernel_sizes=[2, 2], strides=[2, 2], pad_type="same")
        y = mb.instance_norm(x=y, gamma=w(8), beta=w(8))
        y = mb.reshape(x=mb.reduce_mean(x=y, axes=[2, 3], keep_dims=False), shape=[1, -1])
        return mb.linear(x=y, weight=w(10, 8))
    found["cnn"] = (cnn, ct.target.iOS17)

    @mb.program(input_specs=[mb.TensorSpec((1, 6, 16)), mb.TensorSpec((1, 6), dtype=types.int32)],
                opset_version=ct.target.iOS18)
    def attention(x, ids):
        x = mb.add(x=x, y=mb.gather(x=w(50, 16), indices=ids, axis=0))
        n = mb.layer_norm(x=x, axes=[-1], gamma=w(16), beta=w(16))
        q, k, v = [mb.transpose(x=mb.reshape(x=mb.linear(x=n, weight=w(16, 16)), shape=[1, 6, 2, 8]),
                                perm=[0, 2, 1, 3]) for _ in range(3)]
        a = mb.scaled_dot_product_attention(query=q, key=k, value=v)
        s = mb.softmax(x=mb.mul(x=mb.matmul(x=q, y=k, transpose_y=True), y=0.35), axis=-1)
        c = mb.concat(values=[a, mb.matmul(x=s, y=v)], axis=-1)
        c = mb.reshape(x=mb.transpose(x=c, perm=[0, 2, 1, 3]), shape=[1, 6, 32])
        p1, p2 = mb.split(x=c, num_splits=2, axis=-1)
        g = mb.gelu(x=mb.reduce_sum(x=mb.stack(values=[p1, p2], axis=0), axes=[0]), mode="TANH_APPROXIMATION")
        out = mb.add(x=mb.slice_by_index(x=g, begin=[0, 1, 0], end=[1, 5, 16]),
                     y=mb.slice_by_size(x=g, begin=[0, 0, 0], size=[1, 4, -1]))
        out = mb.squeeze(x=mb.expand_dims(x=out, axes=[0]), axes=[0])
        padded = mb.pad(x=mb.tile(x=out, reps=[1, 2, 1]), pad=[0, 0, 1, 1], mode="reflect")
        picked = mb.gather_along_axis(x=padded, indices=np.zeros((1, 10, 18), dtype=np.int32), axis=1)
        return picked, mb.reduce_argmax(x=out, axis=-1)
    found["attention"] = (attention, ct.target.iOS18)

    @mb.program(input_specs=[mb.TensorSpec((5, 1, 8)), mb.TensorSpec((1, 16)), mb.TensorSpec((1, 16))],
                opset_version=ct.target.iOS17)
    def lstm(x, h, c):
        return mb.lstm(x=x, initial_h=h, initial_c=c, weight_ih=w(64, 8), weight_hh=w(64, 16),
                       bias=w(64), direction="forward", output_sequence=True)
    found["lstm"] = (lstm, ct.target.iOS17)

    @mb.program(input_specs=[mb.TensorSpec((2, 3)), mb.TensorSpec((1,), dtype=types.int32)],
                opset_version=ct.target.iOS17)
    def control(x, n):
        y = mb.cond(pred=mb.greater(x=mb.reduce_sum(x=x), y=0.0),
                    _true_fn=lambda: mb.mul(x=x, y=2.0), _false_fn=lambda: mb.relu(x=x))
        r, _ = mb.while_loop(_cond=lambda a, i: mb.less(x=i, y=10),
                             _body=lambda a, i: (mb.add(x=a, y=1.0), mb.add(x=i, y=1)),
                             loop_vars=(y, mb.squeeze(x=n)))
        return mb.add(x=r, y=mb.fill(shape=mb.shape(x=r), value=1.5)), mb.cast(x=r, dtype="int32")
    found["control"] = (control, ct.target.iOS17)

    @mb.program(input_specs=[mb.TensorSpec((1, 4), dtype=types.fp16),
                             mb.StateTensorSpec((1, 4), dtype=types.fp16)], opset_version=ct.target.iOS18)
    def state(x, acc):
        new = mb.add(x=mb.read_state(input=acc), y=x)
        mb.coreml_update_state(state=acc, value=new)
        return mb.mul(x=new, y=np.float16(2.0))
    found["state"] = (state, ct.target.iOS18)

    @mb.program(input_specs=[mb.TensorSpec((1, 8))], opset_version=ct.target.iOS17)
    def assorted(x):
        a = mb.clip(x=x, alpha=-1.0, beta=1.0)
        values, indices = mb.topk(x=mb.matmul(x=mb.reshape(x=a, shape=[2, 4]), y=w(4, 3)), k=2, axis=-1)
        return (mb.cumsum(x=values, axis=1), mb.one_hot(indices=indices, one_hot_vector_size=3),
                mb.resize_bilinear(x=mb.reshape(x=a, shape=[1, 2, 4]), target_size_height=4, target_size_width=8),
                mb.upsample_nearest_neighbor(x=mb.reshape(x=a, shape=[1, 1, 2, 4]), scale_factor_height=2,
                                             scale_factor_width=2),
                mb.space_to_depth(x=mb.reshape(x=a, shape=[1, 2, 2, 2]), block_size=2),
                mb.argsort(x=x, axis=-1), mb.range_1d(start=0, end=8, step=2),
                mb.scatter(data=w(4, 3), indices=np.array([1, 2], dtype=np.int32), updates=w(2, 3), mode="add"))
    found["assorted"] = (assorted, ct.target.iOS17)

    @mb.program(input_specs=[mb.TensorSpec((get_new_symbol(), 8))], opset_version=ct.target.iOS17)
    def flexible(x):
        h = mb.silu(x=mb.linear(x=x, weight=w(16, 8), bias=w(16)))
        rows = mb.slice_by_index(x=mb.shape(x=h), begin=[0], end=[1])
        r = mb.reshape(x=h, shape=mb.concat(values=[rows, np.array([4, 4], dtype=np.int32)], axis=0))
        return mb.reduce_max(x=mb.transpose(x=r, perm=[0, 2, 1]), axes=[-1])
    found["flexible"] = (flexible, ct.target.iOS17)
    return found
