"""The StableHLO replay harness (tests/stablehlo_replay.py) on small MLIR snippets of our own.

The snippets are written here, not copied from StableHLO: they cover the
parser's forms (pretty and generic ops, ``<{...}>`` properties, regions with
``^bb0`` arguments, ``cond``/``do``, splats, hex and complex literals), the
mapping of a few ops onto ``hlodsl.ops``, and the classification: a wrong
expected value is ``fail``, an op hlodsl lacks is ``unsupported-op``.
"""

from __future__ import annotations

import doctest
import importlib
import json
import textwrap

import numpy as np
import pytest
from platform_rules import needs_devices
from stablehlo_replay import main, replay_text
from stablehlo_replay_parser import parse_cases
from stablehlo_replay_values import dense


def _run(body: str) -> dict:
    text = "func.func @t() {\n" + textwrap.dedent(body) + "\n  func.return\n}\n"
    (result,) = replay_text(text, "snippet.mlir")
    return result


def _assert_pass(body: str) -> None:
    result = _run(body)
    assert result["kind"] == "pass", result
    assert result["checks"] >= 1


def test_dense_literals():
    assert dense("dense<[[1, 2], [3, 4]]>", "tensor<2x2xi32>").tolist() == [[1, 2], [3, 4]]
    assert dense("dense<7>", "tensor<2xui8>").tolist() == [7, 7]
    assert dense("dense<[true, false]>", "tensor<2xi1>").tolist() == [True, False]
    np.testing.assert_array_equal(dense("dense<[0xFF800000, 2.5]>", "tensor<2xf32>"),
                                  np.float32([-np.inf, 2.5]))
    assert dense("dense<[(1.5, -2.0)]>", "tensor<1xcomplex<f64>>").tolist() == [1.5 - 2j]
    assert dense('dense<"0x0000C03F">', "tensor<f32>") == np.float32(1.5)
    assert dense("dense<18446744073709551615>", "tensor<ui64>") == np.uint64(2**64 - 1)


def test_parser_generic_form_with_properties_and_region():
    text = textwrap.dedent("""\
        // RUN: replay -split-input-file
        func.func @first() {
          %x = stablehlo.constant dense<[4, 9, 1]> : tensor<3xi32>
          %s:2 = "stablehlo.sort"(%x, %x) <{dimension = 0 : i64, is_stable = true}> ({
            ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
              %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
              stablehlo.return %p : tensor<i1>
          }) : (tensor<3xi32>, tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>)
          check.expect_eq_const %s#1, dense<[1, 4, 9]> : tensor<3xi32>
          func.return
        }
        // -----
        func.func @second() {
          func.return
        }
        """)
    first, second = parse_cases(text, "x.mlir", split=True)
    assert (first.name, second.name) == ("first", "second")
    sort = first.entry.ops[1]
    assert sort.name == "stablehlo.sort" and sort.results == ["%s#0", "%s#1"]
    assert sort.attrs == {"dimension": "0", "is_stable": "true"}
    assert [n for n, _ in sort.regions[0].args] == ["%a", "%b", "%c", "%d"]
    assert sort.regions[0].ops[0].words == ["LT", "SIGNED"]
    assert replay_text(text, "x.mlir")[0]["kind"] == "pass"


def test_elementwise_ops():
    _assert_pass("""
      %a = stablehlo.constant dense<[1.5, -2.0, 4.0]> : tensor<3xf32>
      %b = stablehlo.constant dense<2.0> : tensor<3xf32>
      %0 = stablehlo.add %a, %b : tensor<3xf32>
      %1 = stablehlo.multiply %0, %b : tensor<3xf32>
      %2 = stablehlo.negate %1 : tensor<3xf32>
      %3 = stablehlo.maximum %2, %a : tensor<3xf32>
      %4 = stablehlo.sqrt %b : tensor<3xf32>
      check.expect_eq_const %3, dense<[1.5, 0.0, 4.0]> : tensor<3xf32>
      check.expect_almost_eq_const %4, dense<1.41421> : tensor<3xf32>
      check.expect_almost_eq %4, %4 : tensor<3xf32>""")


def test_compare_select_convert_iota():
    _assert_pass("""
      %i = stablehlo.iota dim = 0 : tensor<4xi64>
      %t = stablehlo.constant dense<2> : tensor<4xi64>
      %p = stablehlo.compare GE, %i, %t : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
      %s = stablehlo.select %p, %i, %t : tensor<4xi1>, tensor<4xi64>
      %f = stablehlo.convert %s : (tensor<4xi64>) -> tensor<4xf64>
      check.expect_eq_const %f, dense<[2.0, 2.0, 2.0, 3.0]> : tensor<4xf64>""")


def test_data_movement_ops():
    _assert_pass("""
      %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
      %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
      %r = stablehlo.reshape %t : (tensor<3x2xi32>) -> tensor<6xi32>
      %s = "stablehlo.slice"(%r) {start_indices = array<i64: 1>, limit_indices = array<i64: 6>,
                                   strides = array<i64: 2>} : (tensor<6xi32>) -> tensor<3xi32>
      %c = stablehlo.concatenate %s, %s, dim = 0 : (tensor<3xi32>, tensor<3xi32>) -> tensor<6xi32>
      %v = stablehlo.reverse %c, dims = [0] : tensor<6xi32>
      %z = stablehlo.constant dense<0> : tensor<i32>
      %p = stablehlo.pad %s, %z, low = [1], high = [0], interior = [1] : (tensor<3xi32>, tensor<i32>) -> tensor<6xi32>
      %b = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<3xi32>) -> tensor<2x3xi32>
      check.expect_eq_const %v, dense<[6, 5, 4, 6, 5, 4]> : tensor<6xi32>
      check.expect_eq_const %p, dense<[0, 4, 0, 5, 0, 6]> : tensor<6xi32>
      check.expect_eq_const %b, dense<[[4, 5, 6], [4, 5, 6]]> : tensor<2x3xi32>""")


def test_dot_general_and_reduce():
    _assert_pass("""
      %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %d = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0]
          : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %s = "stablehlo.reduce"(%d, %zero) ({
        ^bb0(%l: tensor<f32>, %r: tensor<f32>):
          %0 = stablehlo.add %l, %r : tensor<f32>
          stablehlo.return %0 : tensor<f32>
      }) {dimensions = array<i64: 1>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
      check.expect_eq_const %s, dense<[17.0, 37.0]> : tensor<2xf32>""")


def test_while_captures_an_outer_value():
    _assert_pass("""
      %i0 = stablehlo.constant dense<0> : tensor<i32>
      %limit = stablehlo.constant dense<5> : tensor<i32>
      %step = stablehlo.constant dense<2> : tensor<i32>
      %n = stablehlo.while(%i = %i0) : tensor<i32>
      cond {
        %c = stablehlo.compare LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %next = stablehlo.add %i, %step : tensor<i32>
        stablehlo.return %next : tensor<i32>
      }
      check.expect_eq_const %n, dense<6> : tensor<i32>""")


def test_if_and_case():
    _assert_pass("""
      %p = stablehlo.constant dense<false> : tensor<i1>
      %one = stablehlo.constant dense<1> : tensor<2xi8>
      %two = stablehlo.constant dense<2> : tensor<2xi8>
      %r = "stablehlo.if"(%p) ({
        stablehlo.return %one : tensor<2xi8>
      }, {
        stablehlo.return %two : tensor<2xi8>
      }) : (tensor<i1>) -> tensor<2xi8>
      %k = stablehlo.constant dense<7> : tensor<i32>
      %c = "stablehlo.case"(%k) ({
        stablehlo.return %two : tensor<2xi8>
      }, {
        stablehlo.return %one : tensor<2xi8>
      }) : (tensor<i32>) -> tensor<2xi8>
      check.expect_eq_const %r, dense<2> : tensor<2xi8>
      check.expect_eq_const %c, dense<1> : tensor<2xi8>""")


def test_gather_and_complex_literals():
    _assert_pass("""
      %x = stablehlo.constant dense<[[(1.0, 1.0), (2.0, 0.0)], [(3.0, -1.0), (0x7F800000, 0.0)]]>
          : tensor<2x2xcomplex<f32>>
      %idx = stablehlo.constant dense<[[1], [0]]> : tensor<2x1xi32>
      %g = "stablehlo.gather"(%x, %idx) {
        dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
                                               start_index_map = [0], index_vector_dim = 1>,
        slice_sizes = array<i64: 1, 2>
      } : (tensor<2x2xcomplex<f32>>, tensor<2x1xi32>) -> tensor<2x2xcomplex<f32>>
      %re = stablehlo.real %g : (tensor<2x2xcomplex<f32>>) -> tensor<2x2xf32>
      check.expect_eq_const %re, dense<[[3.0, 0x7F800000], [1.0, 2.0]]> : tensor<2x2xf32>""")


def test_func_call_is_inlined():
    text = textwrap.dedent("""\
        func.func @twice(%v: tensor<3xi16>) -> tensor<3xi16> {
          %r = stablehlo.add %v, %v : tensor<3xi16>
          return %r : tensor<3xi16>
        }
        func.func @main() {
          %x = stablehlo.constant dense<[1, -2, 3]> : tensor<3xi16>
          %y = func.call @twice(%x) : (tensor<3xi16>) -> tensor<3xi16>
          check.expect_eq_const %y, dense<[2, -4, 6]> : tensor<3xi16>
          func.return
        }
        """)
    (result,) = replay_text(text, "call.mlir", split=False)
    assert result["kind"] == "pass", result


def test_expect_close_counts_ulps():
    _assert_pass("""
      %a = stablehlo.constant dense<1.0> : tensor<f16>
      %b = stablehlo.constant dense<0x3C02> : tensor<f16>
      check.expect_close %a, %b, max_ulp_difference = 2 : tensor<f16>, tensor<f16>""")
    result = _run("""
      %a = stablehlo.constant dense<1.0> : tensor<f16>
      %b = stablehlo.constant dense<0x3C03> : tensor<f16>
      check.expect_close %a, %b, max_ulp_difference = 2 : tensor<f16>, tensor<f16>""")
    assert result["kind"] == "fail"


@pytest.mark.parametrize("check", [
    "check.expect_eq_const %s, dense<[2, 5]> : tensor<2xi32>",
    "check.expect_almost_eq_const %f, dense<[1.5, 2.0]> : tensor<2xf32>",
    "check.expect_almost_eq_const %f, dense<[1.5, 2.5]> : tensor<2xf32>, tolerance = 0.0001",
])
def test_a_wrong_expected_value_is_a_failure(check):
    result = _run(f"""
      %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
      %s = stablehlo.add %x, %x : tensor<2xi32>
      %f = stablehlo.constant dense<[1.5, 2.5002]> : tensor<2xf32>
      {check}""")
    assert result["kind"] == "fail", result
    assert "expected" in result["reason"]


def test_a_tolerance_is_honoured():
    _assert_pass("""
      %f = stablehlo.constant dense<[1.5, 2.5002]> : tensor<2xf32>
      check.expect_almost_eq_const %f, dense<[1.5, 2.5]> : tensor<2xf32> {tolerance = 0.001 : f64}""")


def test_unknown_op_and_type_are_unsupported():
    op = _run("""
      %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
      %y = stablehlo.frobnicate %x : tensor<2xi32>
      check.expect_eq_const %y, dense<[1, 2]> : tensor<2xi32>""")
    assert op["kind"] == "unsupported-op" and "stablehlo.frobnicate" in op["reason"]
    typ = _run("""
      %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf5E9M9>
      check.expect_eq_const %x, dense<[1.0, 2.0]> : tensor<2xf5E9M9>""")
    assert typ["kind"] == "unsupported-type" and "f5E9M9" in typ["reason"]


def test_hlodsl_refusing_is_an_error_and_bad_text_a_parse_failure():
    error = _run("""
      %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
      %y = stablehlo.concatenate %x, %x, dim = 3 : (tensor<2xi32>, tensor<2xi32>) -> tensor<4xi32>
      check.expect_eq_const %y, dense<[1, 2, 1, 2]> : tensor<4xi32>""")
    assert error["kind"] == "error" and "Concatenate" in error["reason"]
    (parse,) = replay_text("func.func @t() {\n  %x = stablehlo.add (((\n}\n", "bad.mlir")
    assert parse["kind"] == "parse"


def test_dynamic_ops_with_constant_shapes_are_refined():
    _assert_pass("""
      %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
      %i = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<2x3xi32>
      %flat = stablehlo.constant dense<[6]> : tensor<1xi64>
      %r = stablehlo.dynamic_reshape %i, %flat : (tensor<2x3xi32>, tensor<1xi64>) -> tensor<6xi32>
      %n = stablehlo.get_dimension_size %i, dim = 1 : (tensor<2x3xi32>) -> tensor<i32>
      check.expect_eq_const %r, dense<[0, 1, 2, 0, 1, 2]> : tensor<6xi32>
      check.expect_eq_const %n, dense<3> : tensor<i32>""")


@needs_devices(2)
def test_run_parallel_runs_collectives_on_several_devices():
    text = textwrap.dedent("""\
        module @two {
          func.func @step(%x: tensor<2x4xi32>) -> (tensor<2x4xi32>, tensor<4x2xi32>) {
            %s = "stablehlo.all_reduce"(%x) ({
              ^bb0(%a: tensor<i32>, %b: tensor<i32>):
                %m = stablehlo.maximum %a, %b : tensor<i32>
                stablehlo.return %m : tensor<i32>
            }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xi32>) -> tensor<2x4xi32>
            %t = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64,
                 split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
            } : (tensor<2x4xi32>) -> tensor<4x2xi32>
            return %s, %t : tensor<2x4xi32>, tensor<4x2xi32>
          }
          func.func @main() {
            %a = stablehlo.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8]]> : tensor<2x4xi32>
            %b = stablehlo.constant dense<[[8, 7, 6, 5], [4, 3, 2, 1]]> : tensor<2x4xi32>
            %r:4 = "interpreter.run_parallel"(%a, %b) {programs = [[@step], [@step]]}
              : (tensor<2x4xi32>, tensor<2x4xi32>) -> (tensor<2x4xi32>, tensor<4x2xi32>, tensor<2x4xi32>, tensor<4x2xi32>)
            check.expect_eq_const %r#2, dense<[[8, 7, 6, 5], [5, 6, 7, 8]]> : tensor<2x4xi32>
            check.expect_eq_const %r#1, dense<[[1, 2], [5, 6], [8, 7], [4, 3]]> : tensor<4x2xi32>
            check.expect_eq_const %r#3, dense<[[3, 4], [7, 8], [6, 5], [2, 1]]> : tensor<4x2xi32>
            func.return
          }
        }
        """)
    (result,) = replay_text(text, "parallel.mlir", split=False)
    assert result["kind"] == "pass", result


@pytest.mark.parametrize("module", [
    "stablehlo_replay", "stablehlo_replay_parser", "stablehlo_replay_values",
    "stablehlo_replay_ops", "stablehlo_replay_shapes", "stablehlo_replay_regions",
    "stablehlo_replay_collectives",
])
def test_harness_docstring_examples(module):
    results = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert results.failed == 0


def test_command_line_on_a_directory_writes_the_json(tmp_path, capsys):
    (tmp_path / "ok.mlir").write_text(textwrap.dedent("""\
        // RUN: stablehlo-translate --interpret -split-input-file %s
        func.func @good() {
          %x = stablehlo.constant dense<[1, 2]> : tensor<2xui8>
          %y = stablehlo.popcnt %x : tensor<2xui8>
          check.expect_eq_const %y, dense<1> : tensor<2xui8>
          func.return
        }
        // -----
        func.func @bad() {
          %x = stablehlo.constant dense<3> : tensor<ui8>
          check.expect_eq_const %x, dense<4> : tensor<ui8>
          func.return
        }
        """))
    out = tmp_path / "out.json"
    assert main([str(tmp_path), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["totals"]["pass"] == 1 and report["totals"]["fail"] == 1
    assert [c["case"] for c in report["cases"]] == ["good", "bad"]
    assert "fail             ok.mlir::bad" in capsys.readouterr().out
