"""Rich introspection: the HTML of code_typed/code_hlo, per-line costs, names users
wrote, derivative attribution, before/after XLA's passes, and the graph."""

from __future__ import annotations

import inspect
import re
import shutil
import sys
import types

import attrs
import hlodsl.stdlib as xp
import numpy as np
import pytest
from hlodsl.stdlib import nn

import hlodsl as hd
from hlodsl.introspect import hlo_graph
from hlodsl.introspect.hlo_text import flops, line_costs, opcode_counts, parse_module

HERE = "test_introspect_html.py"


def dense(W, x, b):
    return W @ x + b


DENSE_LINE = inspect.getsourcelines(dense)[1] + 1


def two_lines(x):
    s = xp.sin(x)
    return xp.sum(s * x)


SIN_LINE = inspect.getsourcelines(two_lines)[1] + 1
SUM_LINE = SIN_LINE + 1


def _dense_args(m=4, n=3):
    rng = np.random.default_rng(0)
    return (hd.array(rng.standard_normal((m, n)).astype(np.float32)),
            hd.array(rng.standard_normal(n).astype(np.float32)),
            hd.array(rng.standard_normal(m).astype(np.float32)))


# -- the per-line table ----------------------------------------------------------------

def test_per_line_table_counts_a_dense_layer_exactly():
    rows = line_costs(parse_module(hd.code_hlo(dense, *_dense_args(), metadata=True)))
    assert [(r.label, r.instructions, r.flops, r.bytes) for r in rows] == [
        (f"{HERE}:{DENSE_LINE}", 2, 2 * 4 * 3 + 4, 4 * 4 + 4 * 4)]  # dot, add; two f32[4]
    table = hd.code_hlo(dense, *_dense_args()).summary()  # metadata comes along anyway
    assert f"{HERE}:{DENSE_LINE}" in str(table) and "return W @ x + b" in str(table)
    assert table.rows[0][1:3] == [2, "28"]


def test_convolution_flops_come_from_the_kernel_shape():
    x = hd.array(np.ones((1, 2, 5, 5), np.float32))
    w = hd.array(np.ones((3, 2, 3, 3), np.float32))
    module = parse_module(hd.code_hlo(lambda x, w: nn.conv(x, w), x, w))
    conv = next(i for i in module.entry.instructions if i.opcode == "convolution")
    assert flops(conv, module.entry) == 2 * (1 * 3 * 3 * 3) * (2 * 3 * 3)


def test_reduce_counts_its_operand_elements_and_rows_sort_by_cost():
    def f(A, v):
        big = xp.sum(A * A)
        small = v + v
        return big, small

    text = hd.code_hlo(f, hd.array(np.ones((8, 8), np.float32)), hd.array(np.ones(2, np.float32)))
    rows = line_costs(parse_module(text._analysis))
    assert [r.flops for r in rows] == [64 + 64, 2, 0]  # multiply + reduce; one add; the tuple
    assert rows[0].line == inspect.getsourcelines(f)[1] + 1


# -- the HTML ----------------------------------------------------------------------------

def test_hlo_html_has_folded_sub_computations_colours_sources_and_the_table():
    page = hd.code_hlo(two_lines, hd.array(np.ones(3, np.float32)))._repr_html_()
    assert page.startswith('<div class="hlodsl">') and page.count("<style>") == 1
    assert "<details open><summary>" in page                     # the entry, open
    assert re.search(r"<details><summary>\d+ sub-computations?", page)  # the rest, folded
    assert '<span class="hd-op">sine</span>' in page and 'class="hd-ty">f32[3]' in page
    assert f">{HERE}:{SIN_LINE}</span>" in page                  # the gutter
    assert "Cost by Python source line" in page and "<table>" in page
    assert "s = xp.sin(x)" in page                                # the line's code


def test_typed_html_lists_op_calls_with_their_lines_and_the_table():
    page = hd.code_typed(dense, *_dense_args())._repr_html_()
    assert '<span class="hd-op">Dot</span>' in page and f"{HERE}:{DENSE_LINE}" in page
    assert "Cost by Python source line" in page and "3 parameters" in page
    page = hd.code_typed(two_lines, hd.array(np.ones(3, np.float32)))._repr_html_()
    assert "<details><summary>1 sub-computation (as HLO)</summary>" in page  # sum's add


def test_big_modules_are_capped_with_a_message():
    def chain(x):
        for _ in range(30):
            x = xp.sin(x)
        return x

    text = hd.code_hlo(chain, hd.array(np.ones(2, np.float32)))
    page = text.html(max_lines=10)
    assert "21 more instructions not shown" in page  # 31 lines: a parameter and 30 sines
    assert page.count('<span class="hd-op">sine</span>') == 9


# -- names users wrote -------------------------------------------------------------------

@attrs.frozen
class Layer:
    weight: hd.Array
    bias: hd.Array


def _net(params, x):
    for layer in params["features"]:
        x = xp.tanh(layer.weight @ x + layer.bias)
    return params["head"][0] @ x


def _net_args():
    f32 = np.float32
    layer = Layer(hd.array(np.eye(3, dtype=f32)), hd.array(np.zeros(3, f32)))
    return {"features": [layer, layer], "head": (hd.array(np.ones((1, 3), f32)),)}, \
        hd.array(np.ones(3, f32))


def test_parameters_are_named_by_their_path_in_code_typed():
    text = str(hd.code_typed(_net, *_net_args()))
    assert text.splitlines()[0].startswith(
        "function _net(params['features'][0].weight: Array[float32, (3, 3)], "
        "params['features'][0].bias: Array[float32, (3,)], params['features'][1].weight")
    assert "params['head'][0]: Array[float32, (1, 3)], x: Array[float32, (3,)])" in text
    assert "(params['features'][0].weight, x)" in text


def test_parameters_in_hlo_are_valid_identifiers_with_the_path_in_op_name():
    params, x = _net_args()
    text = str(hd.code_hlo(_net, params, x, metadata=True))
    assert ("params.features.0.weight = f32[3,3] parameter(0), "
            "metadata={op_name=\"params['features'][0].weight\"}") in text
    assert "params.head.0 = f32[1,3] parameter(4)" in text
    assert "  x = f32[3] parameter(5)\n" in text              # a plain name needs no metadata
    optimized = hd.code_hlo(_net, params, x, optimize=True)  # XLA parses and keeps it
    assert "op_name=\"params['features'][0].weight\"" in optimized.replace("\\'", "'")
    np.testing.assert_allclose(hd.compile(_net)(params, x), _net(params, x), rtol=1e-6)
    page = optimized._repr_html_()
    assert "# params[&#x27;features&#x27;][1].bias" in page  # parameters noted by path


# -- Jupyter cells ------------------------------------------------------------------------

def test_jupyter_cells_show_as_in_n_line_k(monkeypatch):
    cell_file = "/tmp/ipykernel_4242/4286937637.py"
    source = "def cell_fn(x):\n    y = x * 2.0\n    return y + 1.0\n"
    namespace: dict = {}
    exec(compile(source, cell_file, "exec"), namespace)  # noqa: S102 (as IPython runs a cell)
    x = hd.array(np.ones(2, np.float32))
    plain = str(hd.code_typed(namespace["cell_fn"], x))
    assert "# 4286937637.py:2" in plain                  # outside IPython: the file name
    shell = types.SimpleNamespace(compile=types.SimpleNamespace(_filename_map={cell_file: 12}))
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    typed = hd.code_typed(namespace["cell_fn"], x)
    assert "# In [12], line 2" in str(typed) and "# In [12], line 3" in str(typed)
    assert "In [12], line 3" in hd.code_hlo(namespace["cell_fn"], x).summary().rows[0][0] \
        or "In [12], line 3" in str(hd.code_hlo(namespace["cell_fn"], x).summary())
    fake.get_ipython = lambda: None                      # IPython imported, no shell
    assert "# 4286937637.py:2" in str(hd.code_typed(namespace["cell_fn"], x))


# -- derivatives --------------------------------------------------------------------------

def test_backward_instructions_are_attributed_to_their_forward_line():
    x = hd.array(np.float32([0.5, 1.0, 2.0]))
    text = hd.code_hlo(hd.grad(two_lines), x, metadata=True)
    assert re.search(r'op_name="[^"/]+/transpose\(jvp\(two_lines\)\)/cosine\.\d+" '
                     rf'source_file="[^"]+" source_line={SIN_LINE}', text)
    labels = {r.label for r in line_costs(parse_module(text))}
    assert {f"grad of {HERE}:{SIN_LINE}", f"grad of {HERE}:{SUM_LINE}",
            f"{HERE}:{SIN_LINE}"} <= labels
    typed = str(hd.code_typed(hd.grad(two_lines), x))
    assert re.search(rf"Cosine\(\)\(x\) :: Array\[float32, \(3,\)\]  # grad of {HERE}:{SIN_LINE}",
                     typed)
    assert "grad of" in hd.code_hlo(hd.grad(two_lines), x)._repr_html_()
    np.testing.assert_allclose(hd.compile(hd.grad(two_lines))(x),
                               np.sin(x) + np.asarray(x) * np.cos(x), rtol=1e-6)


def test_eager_derivatives_are_unchanged():
    x = hd.array(np.float32([0.5, 1.0]))
    np.testing.assert_allclose(hd.grad(two_lines)(x), np.sin(x) + np.asarray(x) * np.cos(x),
                               rtol=1e-6)


# -- before and after XLA's passes --------------------------------------------------------

def test_optimized_text_compares_opcodes_and_reports_memory():
    args = _dense_args()
    emitted = parse_module(hd.code_hlo(dense, *args))
    optimized = hd.code_hlo(dense, *args, optimize=True)
    table = optimized.passes()
    rows = {r[0]: r[1:] for r in table.rows}
    assert rows["dot"][0] == opcode_counts(emitted)["dot"] == 1
    assert rows["total"][0] == sum(opcode_counts(emitted).values())
    assert rows["total"][1] == sum(opcode_counts(parse_module(optimized)).values())
    assert rows["fusion"][0] == 0 and rows["fusion"][1] >= 1
    stats = optimized.memory_stats
    assert stats["argument_size_in_bytes"] == 4 * (12 + 3 + 4)
    assert stats["output_size_in_bytes"] == 16
    page = optimized._repr_html_()
    assert "before and after" in page and "fusions: " in page and "memory statistics" in page
    with pytest.raises(ValueError, match="optimize=True"):
        hd.code_hlo(dense, *args).passes()


def test_optimized_text_of_a_compiled_function_has_the_comparison_too():
    f = hd.compile(dense)
    text = hd.code_hlo(f, *_dense_args(), optimize=True)
    assert text.memory_stats is not None and text.passes().rows[-1][0] == "total"


# -- the graph ----------------------------------------------------------------------------

def test_graph_dot_text_has_nodes_edges_and_fusion_clusters():
    args = _dense_args()
    g = hd.code_hlo(dense, *args).graph()
    assert g.dot.startswith("digraph dense {") and g.dot.rstrip().endswith("}")
    assert g.dot.count("->") == 4 and "dot\\nf32[4]" in g.dot and "W\\nf32[4,3]" in g.dot
    opt = hd.code_hlo(dense, *args, optimize=True).graph(expand_fusions=True)
    assert "subgraph cluster_" in opt.dot
    with pytest.raises(ValueError, match="no computation named 'nope'"):
        hd.code_hlo(dense, *args).graph("nope")


def test_graph_is_capped_with_a_note():
    def chain(x):
        for _ in range(30):
            x = xp.sin(x)
        return x

    g = hd.code_hlo(chain, hd.array(np.ones(2, np.float32))).graph(max_nodes=5)
    assert "26 more instructions of chain not drawn" in g.note and g.dot.count("label=") == 6


def test_graph_without_graphviz_shows_dot_source_and_a_hint(monkeypatch):
    monkeypatch.setattr(hlo_graph.shutil, "which", lambda name: None)
    g = hd.code_hlo(dense, *_dense_args()).graph()
    assert g.svg() is None and g._repr_svg_() is None
    assert repr(g).startswith("# Graphviz's `dot` program is not installed")
    assert "<pre>digraph dense" in g._repr_html_()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_renders_svg_with_graphviz():
    g = hd.code_hlo(dense, *_dense_args(), optimize=True).graph()
    svg = g.svg()
    assert svg.startswith("<svg") and "</svg>" in svg and "<svg" in g._repr_html_()
