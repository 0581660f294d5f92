"""benchmarks/figure3.py: the instruction counter, and VGG19's forward pass as one module.

The figure itself (XLA's stages, child processes) is made by
``python -m benchmarks.figure3``; these tests check its counting on modules
whose counts are known, without compiling VGG19.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `benchmarks` is a top-level folder, not installed
    sys.path.insert(0, str(ROOT))

import hlodsl as hd  # noqa: E402
import hlodsl.stdlib as xp  # noqa: E402
from benchmarks.figure3 import PAPER, Counts, count_instructions, table  # noqa: E402
from hlodsl.stdlib import models, nn  # noqa: E402

# XLA's printing: % names, layouts, a tuple result with /*index=N*/ comments,
# metadata braces, a compare direction, a one-line computation, and the stack
# frame tables jax appends (not instructions).
XLA_STYLE = """HloModule m, entry_computation_layout={(f32[2]{0})->(f32[2]{0}, pred[2]{0})}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b), metadata={op_name="x"}
}

one { p = f32[] parameter(0) }

ENTRY %main.3 (x.1: f32[2]) -> (f32[2], pred[2]) {
  %x.1 = f32[2]{0} parameter(0), metadata={op_name="x"}
  %c = f32[] constant(0)
  %r = f32[] reduce(%x.1, %c), dimensions={0}, to_apply=%max
  %gt = pred[2]{0} compare(%x.1, %x.1), direction=GT
  ROOT %t = (f32[2]{0}, /*index=1*/pred[2]{0}) tuple(%x.1, %gt)
}

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=2}
"""


def test_counts_a_module_in_xla_style():
    c = count_instructions(XLA_STYLE)
    assert c.computations == 3
    assert dict(c.entry) == {"parameter": 1, "constant": 1, "reduce": 1, "compare-GT": 1,
                             "tuple": 1}
    assert dict(c.total) == {"parameter": 4, "constant": 1, "reduce": 1, "compare-GT": 1,
                             "tuple": 1, "maximum": 1}


def test_counts_the_text_hlodsl_emits():
    x = hd.array(np.ones((3, 4), np.float32))
    text = hd.code_hlo(lambda x: xp.sum(xp.exp(x) * x, axis=1), x)
    c = count_instructions(text)
    # the lines of the form "name = type opcode(...)" are the instructions
    assert sum(c.total.values()) == sum(" = " in line for line in text.splitlines())
    assert c.entry["exponential"] == c.entry["multiply"] == c.entry["reduce"] == 1
    assert c.total["parameter"] == c.entry["parameter"] + 2  # the add computation's two


def test_vgg19_forward_is_one_module():
    params = models.vgg19_init(nn.key(0), num_classes=10, hidden=16)
    x = hd.array(np.zeros((2, 3, 32, 32), np.float32))
    text = hd.code_hlo(models.vgg19, params, x)
    assert text.count("HloModule") == 1 and text.count("ENTRY") == 1
    c = count_instructions(text)
    assert c.computations == 2  # the entry and max-pool's max, emitted once for five pools
    assert (c.entry["convolution"], c.entry["reduce-window"], c.entry["dot"]) == (16, 5, 3)
    assert c.entry["parameter"] == 38 + 1  # 19 weights and biases, the images
    assert sum(c.entry.values()) < PAPER[("forward", "emitted")][0]


def test_table_has_totals_and_the_papers_numbers():
    from collections import Counter

    c = Counts(Counter({"parameter": 2, "add": 1}), Counter({"parameter": 4, "add": 2}), 2)
    text = table({("forward", "emitted"): c, ("forward", "emitted", "jax"): c})
    lines = text.splitlines()
    assert lines[0].startswith("| opcode | fwd emitted E | fwd emitted T |")
    assert "| parameter | 2 | 4 |" in lines
    assert "| **total** | **3** | **6** |" in lines
    assert "| paper (XLA.jl) | 183 | 361 |" in lines
    assert "| jax.jit, same network | 3 | 6 |" in lines
