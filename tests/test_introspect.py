"""code_typed and code_hlo: the staged program and the module, before and after XLA."""

import inspect

import numpy as np

import hlodsl as hd
from hlodsl import demo


def _dense_args():
    rng = np.random.default_rng(0)
    return (hd.array(rng.standard_normal((10, 10)).astype(np.float32)),
            hd.array(rng.standard_normal(10).astype(np.float32)),
            hd.array(rng.standard_normal(10).astype(np.float32)))


DENSE_LINE = inspect.getsourcelines(demo.dense)[1] + 1  # the line of `return W @ x + b`


def test_code_typed_is_one_op_call_per_line_with_inferred_types():
    text = str(hd.code_typed(demo.dense, *_dense_args()))
    assert text.splitlines() == [
        "function dense(W: Array[float32, (10, 10)], x: Array[float32, (10,)], "
        "b: Array[float32, (10,)])",
        "  %1 = Dot(lhs_contracting=(1,), rhs_contracting=(0,))(W, x) :: "
        f"Array[float32, (10,)]  # demo.py:{DENSE_LINE}",
        f"  %2 = Add()(%1, b) :: Array[float32, (10,)]  # demo.py:{DENSE_LINE}",
        "  return %2",
    ]


def test_code_hlo_as_emitted_matches_the_papers_listing(monkeypatch):
    # The listing of hd.config's default precision; a GPU run of the suite configures
    # "highest" (tests/conftest.py), which the dot then names.
    monkeypatch.setattr(hd.config, "default_matmul_precision", "highest")
    assert "dot(W, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, " \
        "operand_precision={highest,highest}\n" in str(hd.code_hlo(demo.dense, *_dense_args()))
    monkeypatch.setattr(hd.config, "default_matmul_precision", "default")
    text = str(hd.code_hlo(demo.dense, *_dense_args()))
    assert text == (
        "HloModule dense\n\n"
        "ENTRY dense {\n"
        "  W = f32[10,10] parameter(0)\n"
        "  x = f32[10] parameter(1)\n"
        "  b = f32[10] parameter(2)\n"
        "  dot.3 = f32[10] dot(W, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  ROOT add.4 = f32[10] add(dot.3, b)\n"
        "}\n"
    )


def test_metadata_records_the_users_source_line():
    text = str(hd.code_hlo(demo.dense, *_dense_args(), metadata=True))
    assert 'source_file="' + demo.__file__ + f'" source_line={DENSE_LINE}' in text


def test_code_hlo_optimized_is_xlas_module_after_its_passes():
    text = str(hd.code_hlo(demo.softmax, _dense_args()[1], optimize=True))
    assert "is_scheduled=true" in text and "fusion(" in text


def test_code_hlo_optimized_of_a_compiled_function_reuses_its_executable():
    from hlodsl import runtime

    f = hd.compile(demo.softmax)
    x = _dense_args()[1]
    f(x)
    before = runtime.stats["compiles"]
    text = str(hd.code_hlo(f, x, optimize=True))
    assert runtime.stats["compiles"] == before  # the cache entry's executable
    assert "is_scheduled=true" in text and "fusion(" in text
    hd.code_hlo(f, hd.array(np.ones(7, np.float32)), optimize=True)  # a new signature
    assert runtime.stats["compiles"] == before + 1 and f.cache_size() == 2


def test_both_render_in_jupyter_and_print_plainly():
    for obj in (hd.code_typed(demo.dense, *_dense_args()), hd.code_hlo(demo.dense, *_dense_args())):
        html = obj._repr_html_()
        assert html.startswith("<div class=\"hlodsl\">") and "<details" in html and "dot" in html.lower()
        assert repr(obj) == str(obj)


def test_demo_runs_and_agrees_with_numpy(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    assert out.count("->  OK") == 2 and "MISMATCH" not in out
