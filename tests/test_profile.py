"""hd.profile: measured time per instruction and per source line (issue 30, item 6).

The rows (by line, by instruction) add up to the measured total; time lands on the
lines that ran; a loop's body counts once per trip. How much of a plain call's wall
time the total accounts for is a measurement: ``python -m benchmarks.profile_accuracy``.
"""

import numpy as np
import pytest

import hlodsl as hd
from hlodsl.introspect.hlo_text import parse_module
from hlodsl.stdlib import models, nn

# XLA's profiler events differ between jaxlib releases: the tests that read them run on
# each stack (`compat`).
compat = pytest.mark.compat


def _mlp(params, x):
    for layer in params[:-1]:
        x = nn.relu(nn.linear(x, layer["weight"], layer["bias"]))
    last = params[-1]
    return nn.linear(x, last["weight"], last["bias"])


def _loss(params, x, y):
    return nn.cross_entropy(_mlp(params, x), y)


_OPT = nn.adam(lr=1e-3)


@hd.compile
def _train_step(params, state, x, y):
    loss, grads = hd.value_and_grad(_loss)(params, x, y)
    params, state = _OPT.update(grads, state, params)  # ADAM LINE
    return params, state, loss


def _cnn(x, w1, w2):
    h = nn.max_pool(nn.relu(nn.conv(x, w1, padding="SAME")), 2)  # CONV 1
    return nn.relu(nn.conv(h, w2, padding="SAME")).mean()  # CONV 2


def _loop(x, w):
    # 20 trips of a matrix product and a tanh: the body's events nest in the while's.
    return hd.fori_loop(0, 20, lambda i, v: hd.stdlib.tanh(v @ w), x).sum()


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker))


@pytest.fixture(scope="module")
def step_args():
    rng = np.random.default_rng(0)
    params = models.mlp_init(nn.key(0), (512, 1024, 512, 10))
    x = hd.array(rng.standard_normal((256, 512)).astype(np.float32))
    y = hd.array(rng.integers(0, 10, 256).astype(np.int32))
    return params, _OPT.init(params), x, y


@pytest.fixture(scope="module")
def step_profile(step_args):
    return hd.profile(_train_step, *step_args, runs=9)


@pytest.fixture(scope="module")
def cnn_args():
    rng = np.random.default_rng(2)
    return [hd.array(rng.standard_normal(s).astype(np.float32) / 8)
            for s in [(4, 3, 48, 48), (32, 3, 3, 3), (64, 32, 3, 3)]]


@pytest.fixture(scope="module")
def loop_args():
    rng = np.random.default_rng(1)
    return (hd.array(rng.standard_normal((128, 256)).astype(np.float32)),
            hd.array((rng.standard_normal((256, 256)) / 16).astype(np.float32)))


@compat
def test_step_rows_add_up_to_the_measured_total(step_profile):
    # How close the total comes to a plain call's wall time is measured, not tested
    # (a busy machine lengthens the wall time, not the events):
    # python -m benchmarks.profile_accuracy.
    p = step_profile
    assert p.total_ns > 0 and p.wall_ns > 0
    by_line = sum(r.time_ns for r in p.lines())
    by_instruction = sum(i.time_ns for i in p.instructions)
    assert by_line == pytest.approx(by_instruction, rel=1e-9)
    assert by_instruction == pytest.approx(p.total_ns, rel=1e-9)


@compat
def test_cnn_time_lands_on_its_convolution_lines(cnn_args):
    p = hd.profile(_cnn, *cnn_args, runs=3)
    assert any(i.opcode in ("convolution", "fusion") for i in p.instructions)
    labels = {r.label for r in p.lines() if r.time_ns > 0}
    assert {f"test_profile.py:{_line_of('# CONV 1')}",
            f"test_profile.py:{_line_of('# CONV 2')}"} <= labels


@compat
def test_loop_body_counts_once_per_trip(loop_args):
    p = hd.profile(_loop, *loop_args, runs=3)
    # The body's instructions ran once per trip, and the while keeps only the moments
    # none of them runs: its events enclose theirs, which are not counted twice.
    body = [i for i in p.instructions if i.events == 20]
    assert body, [(i.name, i.events) for i in p.instructions]
    loop = [i for i in p.instructions if i.opcode == "while"]
    assert len(loop) == 1 and loop[0].events == 1
    assert loop[0].time_ns < 0.2 * sum(i.time_ns for i in body)
    assert p.total_ns == pytest.approx(sum(i.time_ns for i in p.instructions), rel=1e-9)


@compat
def test_instructions_are_those_of_the_optimised_module(step_args, step_profile):
    module = parse_module(hd.code_hlo(_train_step, *step_args, optimize=True))
    names = {i.name for c in module.computations for i in c.instructions}
    assert {i.name for i in step_profile.instructions} <= names
    assert all(i.time_ns >= 0 for i in step_profile.instructions)
    assert any(i.opcode == "fusion" for i in step_profile.instructions)


@compat
def test_step_shows_adam_and_its_real_share(step_profile):
    rows = {r.label: r for r in step_profile.lines()}
    adam = rows[f"test_profile.py:{_line_of('# ADAM LINE')}"]
    total_time = sum(r.time_ns for r in rows.values())
    total_flops = sum(r.flops for r in rows.values())
    assert adam.time_ns > 0 and adam.flops > 0
    # Adam is elementwise over every parameter: far more of the time than of the FLOPs.
    assert adam.time_ns / total_time > adam.flops / total_flops
    assert any(label.startswith("grad of test_profile.py:") for label in rows)


@compat
def test_tables_print_and_render(step_profile):
    text = str(step_profile)
    assert "Measured time by Python source line" in text and "share" in text
    assert "test_profile.py:" in text
    page = step_profile._repr_html_()
    assert "<table" in page and "hd-bar" in page and "hd-grad" in page
    by_instruction = str(step_profile.by_instruction(5))
    assert "fusion" in by_instruction and len(by_instruction.splitlines()) == 7


@compat
def test_code_hlo_profile_runs_its_program(loop_args):
    p = hd.code_hlo(_loop, *loop_args, optimize=True).profile(runs=2)
    assert p.runs == 2 and p.total_ns > 0
    assert any(i.opcode == "while" for i in p.instructions)


@compat
def test_bad_input_is_refused(loop_args):
    with pytest.raises(ValueError, match="profile: runs must be a positive int"):
        hd.profile(_loop, *loop_args, runs=0)
    with pytest.raises(TypeError, match="profile: f must be a callable"):
        hd.profile(3, *loop_args)
    with pytest.raises(ValueError, match="only the text of code_hlo"):
        hd.code_typed(_loop, *loop_args).profile()


@compat
def test_a_donating_step_is_profiled_on_copies_of_its_donated_arguments():
    step = hd.compile(lambda w, x: (w - 0.5 * (w @ x), (w @ x).sum()), donate_argnums=0)
    w = hd.array(np.eye(32, dtype=np.float32))
    x = hd.array(np.ones((32, 32), np.float32))
    p = hd.profile(step, w, x, runs=3)
    assert p.runs == 3 and p.total_ns > 0 and p.instructions
    np.testing.assert_array_equal(np.asarray(w), np.eye(32))  # still the caller's, readable
    new, _ = step(w, x)  # and donated by a call of the user's own
    np.testing.assert_allclose(np.asarray(new), np.eye(32) - 0.5)
    with pytest.raises(hd.DonatedArrayError):
        np.asarray(w)
