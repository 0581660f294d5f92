"""benchmarks.vgg19_layout counts layout-only fusions and the bytes they write."""

from benchmarks.vgg19_layout import layout_fusions

MODULE = """HloModule m

%fused_transpose (p: f32[2,3]) -> f32[3,2] {
  %p = f32[2,3]{1,0} parameter(0)
  ROOT %t = f32[3,2]{1,0} transpose(%p), dimensions={1,0}
}

%fused_add (a: f32[3,2], b: f32[3,2]) -> f32[3,2] {
  %a = f32[3,2]{1,0} parameter(0)
  %b = f32[3,2]{1,0} parameter(1)
  %t = f32[3,2]{1,0} transpose(%a), dimensions={0,1}
  ROOT %s = f32[3,2]{1,0} add(%t, %b)
}

ENTRY %main (x: f32[2,3], y: f32[3,2]) -> f32[3,2] {
  %x = f32[2,3]{1,0} parameter(0)
  %y = f32[3,2]{1,0} parameter(1)
  %f = f32[3,2]{1,0} fusion(%x), kind=kLoop, calls=%fused_transpose
  %c = f32[3,2]{0,1} copy(%y)
  ROOT %g = f32[3,2]{1,0} fusion(%f, %c), kind=kLoop, calls=%fused_add
}
"""


def test_a_transpose_fusion_and_a_copy_count_and_a_fusion_with_arithmetic_does_not():
    count, written = layout_fusions(MODULE)
    assert count == 2
    assert written == 2 * 6 * 4  # two f32[3,2] results
