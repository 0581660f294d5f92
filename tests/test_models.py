"""hlodsl.stdlib.models against hand-built torch models with the same weights."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch (the oracle) comes with the test extra; .ci/compat installs test-core")
from torch import nn as tnn  # noqa: E402

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.stdlib import models, nn

torch.set_num_threads(2)


def torch_vgg19(num_classes: int, hidden: int) -> tnn.Module:
    """torchvision's vgg19 layer by layer (same order, so state_dict keys match)."""
    layers, c_in = [], 3
    for item in models.VGG19_CONFIG:
        if item == "M":
            layers.append(tnn.MaxPool2d(2, 2))
        else:
            layers += [tnn.Conv2d(c_in, item, 3, padding=1), tnn.ReLU(inplace=True)]
            c_in = item
    model = tnn.Module()
    model.features = tnn.Sequential(*layers)
    model.avgpool = tnn.AdaptiveAvgPool2d((7, 7))
    model.classifier = tnn.Sequential(
        tnn.Linear(512 * 7 * 7, hidden), tnn.ReLU(True), tnn.Dropout(),
        tnn.Linear(hidden, hidden), tnn.ReLU(True), tnn.Dropout(),
        tnn.Linear(hidden, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model.eval()


@pytest.fixture(scope="module")
def vgg():
    torch.manual_seed(0)
    model = torch_vgg19(num_classes=10, hidden=64)
    for m in model.modules():  # biases are zero by default in torchvision: make them count
        if isinstance(m, (tnn.Conv2d, tnn.Linear)):
            tnn.init.uniform_(m.bias, -0.05, 0.05)
    params = models.vgg19_params_from_torch(model.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    return model, params, x


VGG19 = hd.compile(models.vgg19)  # one compile per signature, shared by the tests


def rel_close(got, want, rtol):
    got, want = np.asarray(got), want.detach().numpy()
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def test_vgg19_forward_matches_torch(vgg):
    model, params, x = vgg
    got = VGG19(params, hd.array(x))
    with torch.no_grad():
        want = model(torch.from_numpy(x))
    assert got.shape == (2, 10)
    rel_close(got, want, 1e-4)


def test_vgg19_channels_last_matches_torch(vgg):
    # NHWC images and vgg19_to_channels_last's params give torch's (NCHW) logits; at 64x64
    # the last map is 2x2, so a wrong spatial order of the first dense layer's columns shows.
    model, params, x = vgg
    cl = models.vgg19_to_channels_last(params)
    assert cl["features"][1]["weight"].shape == (3, 3, 64, 64)
    w, w_cl = np.asarray(params["classifier"][0]["weight"]), cl["classifier"][0]["weight"]
    np.testing.assert_array_equal(
        np.asarray(w_cl), w.reshape(-1, 512, 7, 7).transpose(0, 2, 3, 1).reshape(w.shape))
    big = np.random.default_rng(2).standard_normal((1, 3, 64, 64)).astype(np.float32)
    for images in (x, big):
        got = VGG19(cl, hd.array(np.ascontiguousarray(images.transpose(0, 2, 3, 1))),
                    data_format="NHWC")
        with torch.no_grad():
            want = model(torch.from_numpy(images))
        assert got.shape == want.shape
        rel_close(got, want, 1e-4)
    with pytest.raises(hd.ShapeError, match=r"vgg19: x must be \(N, H, W, C\)"):
        VGG19(cl, hd.array(x), data_format="NHWC")


def test_vgg19_full_size_forward_matches_torch():
    # torchvision's VGG19 as is: 224x224, batch 1, the 4096-4096-1000 classifier.
    torch.manual_seed(1)
    model = torch_vgg19(num_classes=1000, hidden=4096)
    params = models.vgg19_params_from_torch(model.state_dict())
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    got = VGG19(params, hd.array(x))
    with torch.no_grad():
        want = model(torch.from_numpy(x))
    assert got.shape == (1, 1000)
    rel_close(got, want, 1e-4)


def test_vgg19_gradient_matches_torch_autograd(vgg):
    # Tolerance: 1e-3 relative, 1e-4 of the tensor's largest gradient absolute
    # (float32 sums over up to 25088 terms, in different orders).
    model, params, x = vgg
    grads = hd.compile(hd.grad(lambda p, x: xp.sum(models.vgg19(p, x))))(params, hd.array(x))
    model.zero_grad()
    model(torch.from_numpy(x)).sum().backward()
    want = {name: p.grad for name, p in model.named_parameters()}
    conv_ids = [i for i, m in enumerate(model.features) if isinstance(m, tnn.Conv2d)]
    pairs = [(grads["features"][k], f"features.{i}") for k, i in enumerate(conv_ids)]
    pairs += [(grads["classifier"][k], f"classifier.{i}") for k, i in enumerate((0, 3, 6))]
    for g, name in pairs:
        for part in ("weight", "bias"):
            got, expected = np.asarray(g[part]), want[f"{name}.{part}"].numpy()
            scale = np.abs(expected).max()
            np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4 * scale,
                                       err_msg=f"{name}.{part}")


def test_vgg19_init_and_dropout(vgg):
    init = models.vgg19_init(nn.key(0), num_classes=10, hidden=16)
    w = np.asarray(init["features"][3]["weight"])
    assert w.shape == (128, 128, 3, 3) and abs(w.std() / np.sqrt(2 / (128 * 9)) - 1) < 0.05
    assert not np.asarray(init["classifier"][0]["bias"]).any()
    assert [c["weight"].shape for c in init["classifier"]] == [(16, 25088), (16, 16), (10, 16)]
    _, params, x = vgg
    x = hd.array(x)
    eval_out = np.asarray(VGG19(params, x))
    train_a = np.asarray(VGG19(params, x, nn.key(1)))
    assert not np.allclose(train_a, eval_out)           # dropout on only with a key
    np.testing.assert_array_equal(train_a, np.asarray(VGG19(params, x, nn.key(1))))
    assert not np.array_equal(train_a, np.asarray(VGG19(params, x, nn.key(2))))
    params = init
    with pytest.raises(KeyError, match="features.0.weight"):
        models.vgg19_params_from_torch({})
    with pytest.raises(hd.ShapeError, match="vgg19: x must be"):
        models.vgg19(params, hd.array(np.zeros((1, 3, 16, 16), np.float32)))


def test_mlp_and_small_cnn_match_torch():
    torch.manual_seed(1)
    t_mlp = tnn.Sequential(tnn.Linear(6, 5), tnn.ReLU(), tnn.Linear(5, 3))
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    params = nn.from_torch(t_mlp.state_dict(), nested=True)
    got = models.mlp([params["0"], params["2"]], hd.array(x))
    np.testing.assert_allclose(np.asarray(got), t_mlp(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    t_cnn = tnn.Sequential(tnn.Conv2d(1, 8, 3, padding="same"), tnn.ReLU(), tnn.MaxPool2d(2),
                           tnn.Conv2d(8, 16, 3, padding="same"), tnn.ReLU(), tnn.MaxPool2d(2),
                           tnn.Flatten(), tnn.Linear(64, 10))
    p = nn.from_torch(t_cnn.state_dict(), nested=True)
    params = {"conv": [p["0"], p["3"]], "dense": p["7"]}
    imgs = np.random.default_rng(3).standard_normal((5, 1, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(hd.compile(models.small_cnn)(params, hd.array(imgs))),
                               t_cnn(torch.from_numpy(imgs)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_small_cnn_trains():
    rng = np.random.default_rng(0)
    images = hd.array(rng.standard_normal((64, 1, 8, 8)).astype(np.float32))
    labels = hd.array(rng.integers(0, 10, 64).astype(np.int32))
    params = models.small_cnn_init(nn.key(0))
    opt = nn.adam(0.01)

    def loss(params, x, y):
        return nn.cross_entropy(models.small_cnn(params, x), y)

    @hd.compile
    def step(params, state, x, y):
        value, grads = hd.value_and_grad(loss)(params, x, y)
        params, state = opt.update(grads, state, params)
        return params, state, value

    state, losses = opt.init(params), []
    for _ in range(20):
        params, state, value = step(params, state, images, labels)
        losses.append(float(value))
    assert losses[-1] < 0.7 * losses[0], losses
    assert sum(b < a for a, b in zip(losses, losses[1:])) >= 15, losses
    assert step.cache_size() == 1
