"""hlodsl.stdlib.nn against torch.nn.functional / torch.optim / torch autograd (float32)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip(
    "torch", reason="PyTorch (the oracle) comes with the test extra; .ci/compat installs test-core")
import torch.nn.functional as F  # noqa: E402

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.stdlib import nn

torch.set_num_threads(1)
RTOL, ATOL = 1e-5, 1e-5


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def t(a):
    return torch.from_numpy(np.asarray(a))


def both(f, *args, **static):
    """``f(*args, **static)`` eagerly and under ``hd.compile``; the two must agree."""
    eager = f(*args, **static)
    staged = hd.compile(f)(*args, **static)
    for e, s in zip(hd.tree.flatten(eager)[0], hd.tree.flatten(staged)[0]):
        np.testing.assert_allclose(np.asarray(s), np.asarray(e), rtol=1e-5, atol=1e-6)
    return eager


def close(got, want, rtol=RTOL, atol=ATOL):
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# -- layers -------------------------------------------------------------------------

TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@settings(max_examples=10, deadline=None)
@given(n=st.sampled_from([1, 2, 3]), groups=st.sampled_from([1, 2]),
       stride=st.integers(1, 2), dilation=st.integers(1, 2), padding=st.sampled_from(
           [0, 1, "SAME", "VALID"]), bias=st.booleans(), seed=st.integers(0, 99))
def test_conv_matches_torch(n, groups, stride, dilation, padding, bias, seed):
    if padding == "SAME":
        stride = 1  # torch's padding="same" takes stride 1 only
    size = {1: 9, 2: 7, 3: 5}[n]
    x = rand(2, 2 * groups, *(size,) * n, seed=seed)
    w = rand(3 * groups, 2, *(3,) * n, seed=seed + 1)
    b = rand(3 * groups, seed=seed + 2) if bias else None
    torch_pad = padding.lower() if isinstance(padding, str) else padding
    want = TORCH_CONV[n](t(x), t(w), None if b is None else t(b), stride=stride,
                         padding=torch_pad, dilation=dilation, groups=groups)
    args = (hd.array(x), hd.array(w)) + ((hd.array(b),) if bias else ())
    got = both(lambda *a: nn.conv(*a, stride=stride, padding=padding, dilation=dilation,
                                  groups=groups), *args)
    close(got, want, rtol=1e-4, atol=1e-4)


def test_conv_asymmetric_padding_pairs():
    x, w = rand(1, 2, 6, 5), rand(4, 2, 2, 3, seed=1)
    got = nn.conv(hd.array(x), hd.array(w), padding=[(1, 0), (2, 1)], stride=(2, 1))
    want = F.conv2d(F.pad(t(x), (2, 1, 1, 0)), t(w), stride=(2, 1))
    close(got, want, rtol=1e-4, atol=1e-4)


def last(a):
    """Channels-first ``(N, C, *spatial)`` to channels-last ``(N, *spatial, C)``."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


@settings(max_examples=8, deadline=None)
@given(n=st.sampled_from([1, 2, 3]), groups=st.sampled_from([1, 2]), stride=st.integers(1, 2),
       padding=st.sampled_from([1, "SAME", ((1, 0),) * 3]), seed=st.integers(0, 99))
def test_conv_channels_last_matches_torch(n, groups, stride, padding, seed):
    # NHWC activations and HWIO weights: torch's result on the permuted inputs, moved back.
    if padding == "SAME":
        stride = 1
    if isinstance(padding, tuple):
        padding = padding[:n]
    size = {1: 8, 2: 6, 3: 4}[n]
    x = rand(2, 2 * groups, *(size,) * n, seed=seed)
    w = rand(3 * groups, 2, *(3,) * n, seed=seed + 1)
    b = rand(3 * groups, seed=seed + 2)
    if isinstance(padding, tuple):
        pairs = tuple(v for pair in reversed(padding) for v in pair)
        want = TORCH_CONV[n](F.pad(t(x), pairs), t(w), t(b), stride=stride, groups=groups)
    else:
        want = TORCH_CONV[n](t(x), t(w), t(b), stride=stride, groups=groups,
                             padding=padding.lower() if isinstance(padding, str) else padding)
    hwio = np.ascontiguousarray(np.moveaxis(w, (0, 1), (-1, -2)))
    got = both(lambda *a: nn.conv(*a, stride=stride, padding=padding, groups=groups,
                                  data_format="NHWC"),
               hd.array(last(x)), hd.array(hwio), hd.array(b))
    close(got, last(want.numpy()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("window,stride,padding", [(2, None, 0), ((2, 3), (1, 2), (1, 0))])
def test_pooling_channels_last_matches_torch(window, stride, padding):
    x = rand(2, 3, 7, 8)
    X = hd.array(last(x))
    close(both(lambda v: nn.max_pool(v, window, stride, padding, data_format="NHWC"), X),
          last(F.max_pool2d(t(x), window, stride, padding).numpy()))
    close(both(lambda v: nn.avg_pool(v, window, stride, padding, False, data_format="NHWC"),
               X), last(F.avg_pool2d(t(x), window, stride, padding,
                                     count_include_pad=False).numpy()))
    for out in (3, 7):
        close(both(lambda v: nn.adaptive_avg_pool(v, out, data_format="NHWC"), X),
              last(F.adaptive_avg_pool2d(t(x), out).numpy()))


def test_channels_last_errors():
    x, w = hd.array(rand(1, 5, 5, 2)), hd.array(rand(3, 3, 3, 4))   # w wants 3 channels
    with pytest.raises(hd.ShapeError, match=r"conv: x \(N, \*spatial, C\).*w.shape\[-2\]"):
        nn.conv(x, w, data_format="NHWC")
    with pytest.raises(ValueError, match="max_pool: data_format must be 'NCHW'.*'NWHC'"):
        nn.max_pool(x, 2, data_format="NWHC")


@pytest.mark.parametrize("window,stride,padding",
                         [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))])
def test_pooling_matches_torch(window, stride, padding):
    x = rand(2, 3, 7, 8)
    X = hd.array(x)
    close(both(lambda v: nn.max_pool(v, window, stride, padding), X),
          F.max_pool2d(t(x), window, stride, padding))
    for include in (True, False):
        close(both(lambda v: nn.avg_pool(v, window, stride, padding, include), X),
              F.avg_pool2d(t(x), window, stride, padding, count_include_pad=include))


def test_pooling_1d_and_3d():
    x1, x3 = rand(2, 3, 9), rand(1, 2, 4, 5, 6)
    close(nn.max_pool(hd.array(x1), 3, 2, 1), F.max_pool1d(t(x1), 3, 2, 1))
    close(nn.avg_pool(hd.array(x3), 2), F.avg_pool3d(t(x3), 2))


@pytest.mark.parametrize("size,out", [(5, 3), (1, 7), (2, 7), (8, 2), (7, 7), (6, 4)])
def test_adaptive_avg_pool_matches_torch(size, out):
    x = rand(1, 2, size, size + 1)
    close(both(lambda v: nn.adaptive_avg_pool(v, (out, out)), hd.array(x)),
          F.adaptive_avg_pool2d(t(x), out))


def test_linear_and_embedding_match_torch():
    x, W, b = rand(4, 5, 6), rand(3, 6, seed=1), rand(3, seed=2)
    close(both(nn.linear, hd.array(x), hd.array(W), hd.array(b)), F.linear(t(x), t(W), t(b)))
    close(nn.dense(hd.array(x), hd.array(W)), F.linear(t(x), t(W)))
    ids, table = np.int32([[0, 3], [2, 2]]), rand(4, 5)
    close(both(nn.embedding, hd.array(ids), hd.array(table)),
          F.embedding(t(ids.astype(np.int64)), t(table)), rtol=0, atol=0)


ACTIVATIONS = [
    (nn.relu, F.relu), (nn.sigmoid, torch.sigmoid), (nn.tanh, torch.tanh), (nn.silu, F.silu),
    (lambda x: nn.gelu(x), F.gelu), (lambda x: nn.gelu(x, "tanh"),
                                     lambda x: F.gelu(x, approximate="tanh")),
    (lambda x: nn.leaky_relu(x, 0.1), lambda x: F.leaky_relu(x, 0.1)),
    (lambda x: nn.softmax(x, axis=1), lambda x: F.softmax(x, dim=1)),
    (nn.log_softmax, lambda x: F.log_softmax(x, dim=-1)),
]


@pytest.mark.parametrize("ours,theirs", ACTIVATIONS)
def test_activations_match_torch(ours, theirs):
    x = rand(3, 4, 5) * 3
    close(both(ours, hd.array(x)), theirs(t(x)))


def test_relu_derivative_is_zero_at_zero_as_torch_in_both_modes():
    x = np.float32([-1, 0, 0, 2, -0.0])
    tx = t(x).requires_grad_()
    F.relu(tx).sum().backward()
    want = tx.grad.numpy()  # [0, 0, 0, 1, 0]

    def loss(v):
        return xp.sum(nn.relu(v))

    close(both(hd.grad(loss), hd.array(x)), want, rtol=0, atol=0)
    close(hd.jvp(nn.relu, (hd.array(x),), (hd.array(np.ones(5, np.float32)),))[1], want,
          rtol=0, atol=0)
    # Second order goes through the rule's own select: d2/dx2 relu(x)**2 = 2 [x > 0].
    close(hd.hessian(lambda v: xp.sum(nn.relu(v) ** 2))(hd.array(x)), np.diag(2 * want),
          rtol=0, atol=0)
    # One compare and one select per ReLU, not maximum's tie-splitting rule.
    text = hd.code_hlo(hd.grad(loss), hd.array(x))
    assert text.count(" compare(") == 1 and " multiply(" not in text


def test_softmax_is_stable_for_large_logits():
    x = np.float32([[1000, 0, -1000], [-1e4, -1e4, -1e4]])
    close(nn.log_softmax(hd.array(x)), F.log_softmax(t(x), dim=-1))
    close(nn.softmax(hd.array(x)), F.softmax(t(x), dim=-1))


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 6)])
def test_batch_norm_training_and_inference_match_torch(shape):
    x, w, b = rand(*shape), rand(3, seed=1), rand(3, seed=2)
    rm, rv = rand(3, seed=3), np.abs(rand(3, seed=4)) + 0.5
    trm, trv = t(rm.copy()), t(rv.copy())
    want = F.batch_norm(t(x), trm, trv, t(w), t(b), training=True, momentum=0.2, eps=1e-3)
    y, m, v = both(lambda *a: nn.batch_norm(*a, training=True, momentum=0.2, eps=1e-3),
                   hd.array(x), hd.array(rm), hd.array(rv), hd.array(w), hd.array(b))
    close(y, want, rtol=1e-4, atol=1e-4)
    close(m, trm)
    close(v, trv)
    want = F.batch_norm(t(x), t(rm), t(rv), t(w), t(b), training=False, eps=1e-3)
    close(both(lambda *a: nn.batch_norm(*a, eps=1e-3), hd.array(x), hd.array(rm),
               hd.array(rv), hd.array(w), hd.array(b)), want, rtol=1e-4, atol=1e-4)


def test_layer_norm_matches_torch():
    x, w, b = rand(2, 3, 4, 5), rand(4, 5, seed=1), rand(4, 5, seed=2)
    close(both(lambda *a: nn.layer_norm(a[0], (4, 5), *a[1:]), hd.array(x), hd.array(w),
               hd.array(b)), F.layer_norm(t(x), (4, 5), t(w), t(b)), rtol=1e-4, atol=1e-5)
    close(nn.layer_norm(hd.array(x), 5), F.layer_norm(t(x), (5,)), rtol=1e-4, atol=1e-5)


# -- losses ---------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_matches_torch(reduction, smoothing):
    logits, labels = rand(6, 5) * 2, np.int64([0, 4, 2, -100, 1, 1])
    want = F.cross_entropy(t(logits), t(labels), reduction=reduction, label_smoothing=smoothing)
    got = both(lambda x, y: nn.cross_entropy(x, y, reduction=reduction,
                                             label_smoothing=smoothing),
               hd.array(logits), hd.array(labels))
    close(got, want)  # with "none", both give 0 at the ignored label
    probs = F.softmax(t(rand(6, 5, seed=3)), dim=1).numpy()
    close(nn.cross_entropy(hd.array(logits), hd.array(probs), reduction=reduction,
                           label_smoothing=smoothing),
          F.cross_entropy(t(logits), t(probs), reduction=reduction, label_smoothing=smoothing))


def test_cross_entropy_with_spatial_dims_and_mse():
    logits, labels = rand(2, 4, 3, 3), np.random.default_rng(0).integers(0, 4, (2, 3, 3))
    close(nn.cross_entropy(hd.array(logits), hd.array(labels.astype(np.int32))),
          F.cross_entropy(t(logits), t(labels)))
    a, b = rand(3, 4), rand(3, 4, seed=1)
    for reduction in ("mean", "sum", "none"):
        close(both(lambda x, y: nn.mse(x, y, reduction), hd.array(a), hd.array(b)),
              F.mse_loss(t(a), t(b), reduction=reduction))


# -- gradients against torch autograd --------------------------------------------------

def torch_grads(f, *arrays):
    ts = [t(a.copy()).requires_grad_(True) for a in arrays]
    f(*ts).backward()
    return [x.grad.numpy() for x in ts]


def check_grads(ours, theirs, *arrays, rtol=1e-4, atol=1e-4):
    n = len(arrays)
    grad = hd.compile(hd.grad(ours, argnums=tuple(range(n))))
    got = grad(*map(hd.array, arrays))
    for g, w in zip(got, torch_grads(theirs, *arrays)):
        close(g, w, rtol=rtol, atol=atol)


def test_conv_gradient_matches_torch():
    x, w, b = rand(2, 4, 7, 6), rand(6, 2, 3, 3, seed=1), rand(6, seed=2)
    check_grads(lambda x, w, b: hd.stdlib.sum(nn.conv(x, w, b, stride=2, padding=1,
                                                      groups=2) ** 2),
                lambda x, w, b: (F.conv2d(x, w, b, stride=2, padding=1, groups=2) ** 2).sum(),
                x, w, b)


def test_pooling_gradients_match_torch():
    x, ct = rand(2, 3, 7, 8), rand(2, 3, 4, 4, seed=1)
    check_grads(lambda x: hd.stdlib.sum(nn.max_pool(x, 3, 2, 1) * ct),
                lambda x: (F.max_pool2d(x, 3, 2, 1) * t(ct)).sum(), x)
    check_grads(lambda x: hd.stdlib.sum(nn.avg_pool(x, 3, 2, 1, False) * ct),
                lambda x: (F.avg_pool2d(x, 3, 2, 1, count_include_pad=False) * t(ct)).sum(), x)


def test_norm_gradients_match_torch():
    x, w, b, ct = rand(4, 3, 5), rand(3, seed=1), rand(3, seed=2), rand(4, 3, 5, seed=3)
    check_grads(lambda x, w, b: hd.stdlib.sum(nn.batch_norm(x, None, None, w, b, True)[0] * ct),
                lambda x, w, b: (F.batch_norm(x, None, None, w, b, True) * t(ct)).sum(), x, w, b)
    w2, b2 = rand(3, 5, seed=4), rand(3, 5, seed=5)
    check_grads(lambda x, w, b: hd.stdlib.sum(nn.layer_norm(x, (3, 5), w, b) * ct),
                lambda x, w, b: (F.layer_norm(x, (3, 5), w, b) * t(ct)).sum(), x, w2, b2)


def test_cross_entropy_and_activation_gradients_match_torch():
    logits, labels = rand(6, 5) * 2, np.int64([0, 4, 2, -100, 1, 1])
    check_grads(lambda x: nn.cross_entropy(x, hd.array(labels), label_smoothing=0.1),
                lambda x: F.cross_entropy(x, t(labels), label_smoothing=0.1), logits)
    x = rand(3, 4)
    check_grads(lambda x: hd.stdlib.sum(nn.gelu(x, "tanh") * nn.softmax(x)),
                lambda x: (F.gelu(x, approximate="tanh") * F.softmax(x, -1)).sum(), x)


def test_exact_gelu_gradient_matches_torch():
    x = rand(3, 4)
    check_grads(lambda x: hd.stdlib.sum(nn.gelu(x) ** 2), lambda x: (F.gelu(x) ** 2).sum(), x)


# -- optimisers against torch.optim -------------------------------------------------------

def _problem():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal(3).astype(np.float32),
            rng.standard_normal((8, 4)).astype(np.float32),
            rng.standard_normal((8, 3)).astype(np.float32))


def _loss(params, x, y):
    return nn.mse(nn.linear(x, params["w"], params["b"]), y)


@pytest.mark.parametrize("make,torch_make", [
    (lambda: nn.sgd(0.1, momentum=0.9), lambda p: torch.optim.SGD(p, 0.1, momentum=0.9)),
    (lambda: nn.sgd(0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
     lambda p: torch.optim.SGD(p, 0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (lambda: nn.sgd(0.05), lambda p: torch.optim.SGD(p, 0.05)),
    (lambda: nn.adam(0.01), lambda p: torch.optim.Adam(p, 0.01)),
    (lambda: nn.adam(0.01, 0.8, 0.99, 1e-6, weight_decay=0.1),
     lambda p: torch.optim.Adam(p, 0.01, (0.8, 0.99), 1e-6, weight_decay=0.1)),
])
def test_optimiser_steps_match_torch(make, torch_make):
    w, b, x, y = _problem()
    opt = make()

    @hd.compile
    def step(params, state, x, y):
        return opt.update(hd.grad(_loss)(params, x, y), state, params)

    params = {"w": hd.array(w), "b": hd.array(b)}
    state = opt.init(params)
    tw, tb = t(w.copy()).requires_grad_(True), t(b.copy()).requires_grad_(True)
    topt = torch_make([tw, tb])
    for _ in range(3):
        params, state = step(params, state, hd.array(x), hd.array(y))
        topt.zero_grad()
        F.mse_loss(F.linear(t(x), tw, tb), t(y)).backward()
        topt.step()
        close(params["w"], tw, rtol=1e-5, atol=1e-6)
        close(params["b"], tb, rtol=1e-5, atol=1e-6)
    assert step.cache_size() == 1  # the step count is data, not a new signature


# -- randomness, initialisers, weights ----------------------------------------------------

def test_keys_are_deterministic_and_split_into_distinct_streams():
    k = nn.key(7)
    a, b = nn.split(k)
    ua, ub = np.asarray(nn.uniform(a, (100,))), np.asarray(nn.uniform(b, (100,)))
    np.testing.assert_array_equal(ua, np.asarray(nn.uniform(a, (100,))))
    np.testing.assert_array_equal(ua, np.asarray(hd.compile(lambda k: nn.uniform(k, (100,)))(a)))
    assert not np.array_equal(ua, ub) and not np.array_equal(ua, np.asarray(
        nn.uniform(nn.key(8), (100,))))
    assert ua.min() >= 0 and ua.max() < 1
    with pytest.raises(TypeError, match="uint64"):
        nn.uniform(hd.array(np.int32([1, 2])), (2,))


@pytest.mark.parametrize("dtype", [hd.float32, hd.float64, hd.float16])
def test_normal_and_uniform_statistics(dtype):
    z = np.asarray(nn.normal(nn.key(1), (20000,), dtype), np.float64)
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    u = np.asarray(nn.uniform(nn.key(2), (20000,), dtype, -3, 1), np.float64)
    assert u.min() >= -3 and u.max() < 1 and abs(u.mean() + 1) < 0.05


def test_dropout_keeps_expected_fraction_scaled_and_differentiates():
    x = hd.array(np.ones((100, 100), np.float32))
    k = nn.key(3)
    y = np.asarray(both(lambda k, x: nn.dropout(k, x, 0.3), k, x))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    g = np.asarray(hd.grad(lambda x: hd.stdlib.sum(nn.dropout(k, x, 0.3)))(x))
    np.testing.assert_allclose(g, y)  # d/dx of x * mask / (1 - rate) is mask / (1 - rate)
    assert nn.dropout(k, x, 0.3, training=False) is x
    assert not np.asarray(nn.dropout(k, x, 1.0)).any()


@pytest.mark.parametrize("shape", [(64, 32), (16, 8, 3, 3)])
def test_initialisers_follow_torch_fans_and_gains(shape):
    w = torch.empty(shape)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(w)
    assert nn.fans(shape) == (fan_in, fan_out)
    k = nn.key(0)
    std = np.asarray(nn.kaiming_normal(k, shape, mode="fan_out", nonlinearity="relu")).std()
    assert abs(std / math.sqrt(2 / fan_out) - 1) < 0.1
    bound = torch.nn.init.calculate_gain("leaky_relu", math.sqrt(5)) * math.sqrt(3 / fan_in)
    u = np.asarray(nn.kaiming_uniform(k, shape, a=math.sqrt(5)))
    assert np.abs(u).max() <= bound and np.abs(u).max() > 0.9 * bound
    u = np.asarray(nn.xavier_uniform(k, shape, gain=2.0))
    assert np.abs(u).max() <= 2 * math.sqrt(6 / (fan_in + fan_out))
    std = np.asarray(nn.xavier_normal(k, shape)).std()
    assert abs(std / math.sqrt(2 / (fan_in + fan_out)) - 1) < 0.1
    assert not np.asarray(nn.zeros(k, shape)).any()
    for name in ("linear", "relu", "tanh", "selu"):
        assert nn.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))


def test_weights_from_torch_and_numpy():
    layer = torch.nn.Linear(3, 2)
    params = nn.from_torch(layer.state_dict())
    x = rand(4, 3)
    close(nn.linear(hd.array(x), params["weight"], params["bias"]), layer(t(x)))
    nested = nn.from_torch(torch.nn.Sequential(layer, torch.nn.Linear(2, 5)).state_dict(),
                           nested=True)          # keys 0.weight, 0.bias, 1.weight, 1.bias
    assert [d["weight"].shape for d in nested] == [(2, 3), (5, 2)]
    gaps = nn.from_torch(torch.nn.Sequential(layer, torch.nn.ReLU(), layer).state_dict(),
                         nested=True)            # 0.* and 2.*: not a list
    assert sorted(gaps) == ["0", "2"]
    assert nn.from_numpy({"a": [np.float64([1])]})["a"][0].dtype is hd.float64


# -- errors -------------------------------------------------------------------------------

def test_errors_name_the_function_and_shapes():
    x = hd.array(rand(1, 4, 5, 5))
    with pytest.raises(hd.ShapeError, match=r"conv: .*f32\[1,4,5,5\].*f32\[2,3,3,3\]"):
        nn.conv(x, hd.array(rand(2, 3, 3, 3)))
    with pytest.raises(ValueError, match="conv: stride=.*2 entries"):
        nn.conv(x, hd.array(rand(2, 4, 3, 3)), stride=(1, 1, 1))
    with pytest.raises(ValueError, match="conv: padding must be"):
        nn.conv(x, hd.array(rand(2, 4, 3, 3)), padding="FULL")
    with pytest.raises(hd.ShapeError, match="max_pool: window"):
        nn.max_pool(x, 6)
    with pytest.raises(hd.ShapeError, match="cross_entropy: integer labels"):
        nn.cross_entropy(hd.array(rand(3, 4)), hd.array(np.int32([0, 1])))
    with pytest.raises(hd.ShapeError, match="linear: "):
        nn.linear(hd.array(rand(2, 3)), hd.array(rand(3, 2)))
    with pytest.raises(hd.ShapeError, match="batch_norm: weight"):
        nn.batch_norm(x, None, None, hd.array(rand(3)), training=True)
    with pytest.raises(ValueError, match="dropout: rate"):
        nn.dropout(nn.key(0), x, 1.5)
