"""Tests for effspec.engine.catalog and the peak data it loads."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from effspec.engine import catalog

# Dense BF16 peak per device in TFLOP/s, per the vendor documents cited in peaks.json.
DENSE_BF16_TFLOPS = {
    "A100-SXM4": 312,
    "A100-PCIe": 312,
    "H100-SXM5": 989.4,
    "H100-PCIe": 756,
    "H100-NVL": 835.5,  # datasheet prints 1,671 with sparsity only; dense is half
    "H200-SXM": 989.4,
    "H800-SXM": 989.4,
    "B200": 2250,
    "MI300X": 1307.4,
    "TPU-v4": 275,
    "TPU-v5e": 197,
    "TPU-v5p": 459,
}


def _raw() -> dict:
    text = resources.files("effspec.data").joinpath("peaks.json").read_text(encoding="utf-8")
    return json.loads(text)


def _all_rows() -> list[catalog.PeakRow]:
    return [row for acc in catalog.known_accelerators() for row in catalog.rows_for(acc)]


def test_schema_validates() -> None:
    pytest.importorskip("jsonschema")
    catalog.validate_catalog()


def test_schema_is_closed_everywhere() -> None:
    schema = json.loads(
        resources.files("effspec.data").joinpath("peaks.schema.json").read_text(encoding="utf-8")
    )
    objects = [schema, *schema["$defs"].values()]
    for obj in objects:
        assert obj["type"] == "object"
        assert obj["additionalProperties"] is False


def test_schema_rejects_bad_rows() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(
        resources.files("effspec.data").joinpath("peaks.schema.json").read_text(encoding="utf-8")
    )
    validator = jsonschema.Draft202012Validator(schema)
    good = _raw()
    assert validator.is_valid(good)
    for mutate in (
        lambda r: r.update(tflops=0),
        lambda r: r.update(tflops=float("inf")),
        lambda r: r.update(dtype="fp4"),
        lambda r: r.update(sparsity="2:4"),
        lambda r: r.update(citation=""),
        lambda r: r.update(extra=1),
        lambda r: r.update(url="http://insecure.example"),
    ):
        bad = _raw()
        mutate(bad["accelerators"][0]["peaks"][0])
        assert not validator.is_valid(bad)


def test_required_accelerators_present() -> None:
    assert set(DENSE_BF16_TFLOPS) <= set(catalog.known_accelerators())


@pytest.mark.parametrize(("acc", "tflops"), sorted(DENSE_BF16_TFLOPS.items()))
def test_dense_bf16_exact(acc: str, tflops: float) -> None:
    row = catalog.lookup(acc, "bf16", "dense")
    assert row is not None
    assert row.accelerator == acc
    assert row.flops == tflops * 1e12


@pytest.mark.parametrize(
    ("acc", "dtype", "sparsity", "tflops"),
    [
        ("A100-SXM4", "tf32", "dense", 156),
        ("A100-SXM4", "fp32", "dense", 19.5),
        ("A100-SXM4", "int8", "sparse", 1248),
        ("A100-PCIe", "tf32", "sparse", 312),
        ("H100-SXM5", "fp8", "dense", 1978.9),
        ("H100-SXM5", "fp8", "sparse", 3957.8),
        ("H100-SXM5", "tf32", "dense", 494.7),
        ("H100-SXM5", "fp32", "dense", 66.9),
        ("H100-PCIe", "fp8", "sparse", 3026),
        ("H100-PCIe", "fp32", "dense", 51),
        ("H100-NVL", "bf16", "sparse", 1671),
        ("H100-NVL", "fp32", "dense", 60),
        ("H200-SXM", "bf16", "sparse", 1978.9),
        ("H800-SXM", "fp8", "sparse", 3957.8),
        ("B200", "fp8", "dense", 4500),
        ("B200", "bf16", "sparse", 4500),
        ("MI300X", "fp8", "sparse", 5229.8),
        ("MI300X", "tf32", "dense", 653.7),
        ("MI300X", "fp32", "dense", 163.4),
        ("TPU-v4", "int8", "dense", 275),
        ("TPU-v5e", "int8", "dense", 393),
        ("TPU-v5p", "int8", "dense", 918),
    ],
)
def test_other_figures(acc: str, dtype: str, sparsity: str, tflops: float) -> None:
    row = catalog.lookup(acc, dtype, sparsity)
    assert row is not None
    assert row.flops == tflops * 1e12


# The rows added for issue 11, one family each: (accelerator, dtype, sparsity, TFLOP/s, words
# the citation must contain). Dense BF16 where the part has it, and FP8 where the
# catalog lists it. V100 has no BF16 (Volta): its Tensor Core figure is FP16.
NEW_ROWS = [
    ("V100-SXM2", "fp16", "dense", 125, "Tesla V100 GPU datasheet"),
    ("V100-SXM2", "fp32", "dense", 15.7, "Tesla V100 GPU datasheet"),
    ("TPU-v3", "bf16", "dense", 123, "'TPU v3'"),
    ("TPU-v6e", "bf16", "dense", 918, "'TPU v6e' (Trillium)"),
    ("TPU-v6e", "int8", "dense", 1836, "'TPU v6e' (Trillium)"),
    ("B200", "bf16", "dense", 2250, "HGX B200"),
    ("B200", "fp8", "dense", 4500, "HGX B200"),
    ("GB200", "bf16", "dense", 2500, "GB200 NVL72"),
    ("GB200", "bf16", "sparse", 5000, "GB200 NVL72"),
    ("GB200", "fp8", "dense", 5000, "GB200 NVL72"),
    ("B300", "bf16", "dense", 2250, "HGX B300"),
    ("B300", "fp8", "dense", 4500, "HGX B300"),
    ("GB300", "bf16", "dense", 2500, "GB300 NVL72"),
    ("GB300", "fp8", "dense", 5000, "GB300 NVL72"),
    ("MI250X", "bf16", "dense", 383, "MI250X data sheet"),
    ("MI300X", "bf16", "dense", 1307.4, "MI300X data sheet"),
    ("MI300X", "fp8", "dense", 2614.9, "MI300X data sheet"),
    ("MI325X", "bf16", "dense", 1307.4, "MI325X data sheet"),
    ("MI325X", "fp8", "dense", 2614.9, "MI325X data sheet"),
    ("MI355X", "bf16", "dense", 2516.6, "MI355X data sheet"),
    ("MI355X", "fp8", "dense", 5033.2, "MI355X data sheet"),
    ("Gaudi2", "bf16", "dense", 432, "Intel Gaudi 3 AI Accelerator"),
    ("Gaudi3", "bf16", "dense", 1835, "Intel Gaudi 3 AI Accelerator"),
    ("Gaudi3", "fp8", "dense", 1835, "Intel Gaudi 3 AI Accelerator"),
    ("Trainium1", "bf16", "dense", 190, "'Trainium Architecture'"),
    ("Trainium1", "fp8", "dense", 190, "'Trainium Architecture'"),
    ("Trainium2", "bf16", "dense", 667, "'Trainium2 Architecture'"),
    ("Trainium2", "fp8", "dense", 1299, "'Trainium2 Architecture'"),
]


@pytest.mark.parametrize(("acc", "dtype", "sparsity", "tflops", "cited"), NEW_ROWS)
def test_new_rows(acc: str, dtype: str, sparsity: str, tflops: float, cited: str) -> None:
    row = catalog.lookup(acc, dtype, sparsity)
    assert row is not None and row.accelerator == acc
    assert row.flops == tflops * 1e12
    assert cited in row.citation


def test_left_out_where_uncertain() -> None:
    """Figures the vendors' documents do not settle are absent rather than guessed."""
    assert catalog.lookup("V100-SXM2", "bf16") is None  # Volta has no BF16
    assert catalog.lookup("V100-SXM2", "fp8") is None
    assert catalog.lookup("Gaudi2", "fp8") is None  # 835 vs 865 TFLOP/s in Intel sources
    assert catalog.lookup("MI355X", "bf16", "sparse") is None
    assert catalog.lookup("B300", "int8") is None and catalog.lookup("GB300", "int8") is None
    assert catalog.lookup("Trainium2", "bf16", "sparse") is None  # not a 2:4 doubling
    assert catalog.lookup("Trainium1", "int8") is None


def test_sparse_is_twice_dense() -> None:
    pairs = 0
    for acc in catalog.known_accelerators():
        for dense in catalog.rows_for(acc):
            if dense.sparsity != "dense":
                continue
            sparse = catalog.lookup(acc, dense.dtype, "sparse")
            if sparse is None:
                continue
            pairs += 1
            if acc in ("B300", "GB300") and dense.dtype in ("nvfp4", "mxfp4"):
                # Blackwell Ultra's FP4: the datasheets print both figures, 144 | 108 and 1,440 | 1,080 PFLOPS (4:3).
                assert math.isclose(sparse.flops, 4 / 3 * dense.flops, rel_tol=1e-3), (acc, dense.dtype)
                continue
            assert math.isclose(sparse.flops, 2 * dense.flops, rel_tol=1e-3), (acc, dense.dtype)
    assert pairs >= 30


def test_no_sparse_rows_for_tpus_or_fp32() -> None:
    for row in _all_rows():
        if row.accelerator.startswith("TPU-") or row.dtype == "fp32":
            assert row.sparsity == "dense", row


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("H100-SXM5-80GB", "H100-SXM5"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM5"),
        ("H100 SXM", "H100-SXM5"),
        ("h100 sxm5 80gb", "H100-SXM5"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("H100 NVL 94GB", "H100-NVL"),
        ("A100-SXM4-40GB", "A100-SXM4"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4"),
        ("A100", "A100-SXM4"),
        ("A100 80GB PCIe", "A100-PCIe"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe"),
        ("MI300X", "MI300X"),
        ("AMD Instinct MI300X", "MI300X"),
        ("TPU v5p", "TPU-v5p"),
        ("tpu-v4", "TPU-v4"),
        ("TPU v5e", "TPU-v5e"),
        ("B200", "B200"),
        ("NVIDIA B200", "B200"),
        ("H200 SXM 141GB", "H200-SXM"),
        ("H800 SXM5", "H800-SXM"),
        ("H100-SXM5", "H100-SXM5"),
        ("Tesla V100-SXM2-32GB", "V100-SXM2"),
        ("V100 SXM2 16GB", "V100-SXM2"),
        ("Cloud TPU v3", "TPU-v3"),
        ("Trillium", "TPU-v6e"),
        ("TPU v6e", "TPU-v6e"),
        ("GB200 NVL72", "GB200"),
        ("HGX B300", "B300"),
        ("GB300", "GB300"),
        ("AMD Instinct MI250X", "MI250X"),
        ("MI325X", "MI325X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("Intel Gaudi 2", "Gaudi2"),
        ("Habana Gaudi2", "Gaudi2"),
        ("Intel Gaudi 3", "Gaudi3"),
        ("AWS Trainium", "Trainium1"),
        ("trn1", "Trainium1"),
        ("Trn2", "Trainium2"),
    ],
)
def test_alias_resolution(name: str, expected: str) -> None:
    assert catalog.canonical_accelerator(name) == expected


# Bare "V100" could be the PCIe part (112 TFLOP/s FP16) or SXM2 (125); "Gaudi" and
# "MI250" are other parts than the catalogued Gaudi2/Gaudi3 and MI250X.
@pytest.mark.parametrize("name", ["H100", "NVIDIA H100", "H100 80GB", "H200", "H800", "", "GPU", "V100", "Gaudi", "MI250",
                                  "TPU", "Trainium3"])
def test_ambiguous_or_unknown_names(name: str) -> None:
    assert catalog.canonical_accelerator(name) is None
    assert catalog.rows_for(name) == ()
    assert catalog.lookup(name, "bf16") is None


def test_identify_a100_sparse_fp16_bf16() -> None:
    rows = catalog.identify("A100-SXM4-80GB", 624e12)
    found = {(r.dtype, r.sparsity) for r in rows}
    assert {("bf16", "sparse"), ("fp16", "sparse")} <= found
    # 624 is also the dense int8 figure (TOPS); nothing else matches.
    assert found == {("bf16", "sparse"), ("fp16", "sparse"), ("int8", "dense")}
    assert all(r.accelerator == "A100-SXM4" and r.flops == 624e12 for r in rows)


def test_identify_h100_tf32_dense() -> None:
    rows = catalog.identify("H100 SXM", 494.7e12)
    assert [(r.accelerator, r.dtype, r.sparsity) for r in rows] == [("H100-SXM5", "tf32", "dense")]


def test_identify_tolerance_and_bad_input() -> None:
    # 989 (datasheet rounding) is within 1 % of 989.4.
    assert {(r.dtype, r.sparsity) for r in catalog.identify("H100 SXM", 989e12)} == {
        ("bf16", "dense"),
        ("fp16", "dense"),
        ("tf32", "sparse"),
    }
    assert catalog.identify("H100 SXM", 989e12, rel_tol=0.0) == ()
    assert catalog.identify("H100 SXM", 700e12) == ()
    for bad in (float("nan"), float("inf"), -989.4e12, 0.0):
        assert catalog.identify("H100 SXM", bad) == ()
    assert catalog.identify("H100 SXM", 989.4e12, rel_tol=float("nan")) == ()
    assert catalog.identify("H100", 989.4e12) == ()


def test_lookup_vocabulary() -> None:
    assert catalog.lookup("H100 SXM", "bfloat16") == catalog.lookup("H100-SXM5", "bf16")
    assert catalog.lookup("H100 SXM", "BF16", "2:4") == catalog.lookup("H100-SXM5", "bf16", "sparse")
    assert catalog.lookup("H100 SXM", "fp4") is None
    assert catalog.lookup("TPU v5p", "bf16", "sparse") is None


def test_every_row_has_citation_and_valid_values() -> None:
    rows = _all_rows()
    assert len(rows) == sum(len(a["peaks"]) for a in _raw()["accelerators"])
    for row in rows:
        assert row.citation.strip(), row
        assert row.dtype in catalog.DTYPES
        assert row.sparsity in catalog.SPARSITIES
        assert math.isfinite(row.flops) and row.flops > 1e12
        assert row.url is None or row.url.startswith("https://")


def test_no_duplicate_rows() -> None:
    keys = [(r.accelerator, r.dtype, r.sparsity) for r in _all_rows()]
    assert len(keys) == len(set(keys))
    raw_keys = [
        (a["id"], p["dtype"], p["sparsity"]) for a in _raw()["accelerators"] for p in a["peaks"]
    ]
    assert len(raw_keys) == len(set(raw_keys))


def test_every_alias_resolves_to_its_own_entry() -> None:
    for acc in _raw()["accelerators"]:
        for name in (acc["id"], *acc["aliases"]):
            assert catalog.canonical_accelerator(name) == acc["id"], name


def test_build_rejects_alias_collision_and_skips_non_finite() -> None:
    raw = _raw()
    raw["accelerators"][1]["aliases"].append("a100 sxm")  # A100-SXM4's alias on A100-PCIe
    with pytest.raises(ValueError, match="matches both"):
        catalog._build(raw)

    raw = _raw()
    peaks = raw["accelerators"][0]["peaks"]
    peaks[0]["tflops"] = float("nan")
    peaks[1]["tflops"] = float("inf")
    built = catalog._build(raw)
    acc = raw["accelerators"][0]["id"]
    assert len(built.rows[acc]) == len(peaks) - 2
    assert all(math.isfinite(r.flops) for r in built.rows[acc])


def test_import_does_not_need_jsonschema() -> None:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(catalog))
    top_level = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top_level.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top_level.add(node.module.split(".")[0])
    assert "jsonschema" not in top_level
    assert top_level <= {"__future__", "dataclasses", "functools", "importlib", "json", "math", "re", "typing"}


# A name resolves, yet another part's id begins with it: the audit says so (EFF207).
@pytest.mark.parametrize(("name", "chosen", "others"), [
    ("A100", "A100-SXM4", ("A100-PCIe",)),
    ("NVIDIA A100 80GB", "A100-SXM4", ("A100-PCIe",)),  # memory words dropped: the bare name again
    ("Trainium", "Trainium1", ("Trainium2",)),
    ("AWS Trainium", "Trainium1", ("Trainium2",)),
    ("A100 PCIe", "A100-PCIe", ()),
    ("A100-SXM4-80GB", "A100-SXM4", ()),
    ("B200", "B200", ()),  # GB200's alias "B200 GB200" begins with it, but its id does not
    ("Trainium2", "Trainium2", ()),
])
def test_also_named(name: str, chosen: str, others: tuple[str, ...]) -> None:
    assert catalog.canonical_accelerator(name) == chosen
    assert catalog.also_named(name) == others


@pytest.mark.parametrize(("name", "parts"), [
    ("H100", ("H100-SXM5", "H100-PCIe", "H100-NVL")),
    ("NVIDIA H100 80GB", ("H100-SXM5", "H100-PCIe", "H100-NVL")),
    ("TPU v5", ("TPU-v5e", "TPU-v5p")),
    ("V100", ("V100-SXM2",)),
    ("GPU", ()),
    ("", ()),
])
def test_candidates_of_an_unresolved_name(name: str, parts: tuple[str, ...]) -> None:
    assert catalog.canonical_accelerator(name) is None
    assert catalog.candidates(name) == parts
    assert catalog.also_named(name) == ()


def test_peak_catalog_with_a_bare_h100_names_the_three_parts() -> None:
    import effspec

    text = 'eff 1\nrun r {\n  hardware { accelerator = "H100"  count = 8 device  dtype = bf16  peak = catalog }\n}\n'
    found = [d for d in effspec.check_text(text, "h.eff").diagnostics if d.code == "EFF020"]
    assert len(found) == 1 and (found[0].span.line, found[0].span.column) == (3, 75)
    assert found[0].message == ("`H100` names no single part of the peak catalog (catalogued parts of that name: "
                                "`H100-SXM5`, `H100-PCIe` and `H100-NVL`), and a peak is not guessed")
    assert 'accelerator = "H100-SXM5"' in found[0].help


def test_eff207_says_whether_the_choice_moves_the_peak() -> None:
    import effspec

    text = ('eff 1\nrun a {\n  hardware { accelerator = "A100"  count = 8 device  dtype = bf16  peak = catalog }\n}\n'
            'run t {\n  hardware { accelerator = "Trainium"  count = 8 device  dtype = bf16  peak = catalog }\n}\n')
    found = [d for d in effspec.check_text(text, "a.eff").diagnostics if d.code == "EFF207"]
    assert [(d.severity, d.span.line, d.span.column) for d in found] == [("info", 3, 28), ("info", 6, 28)]
    a100, trn = found
    # A100 SXM4 and PCIe: dense BF16 312 TFLOP/s both (datasheet); Trainium1 190, Trainium2 667.
    assert "the A100-SXM4 row was chosen, not A100-PCIe" in a100.message and "no figure depends" in a100.message
    assert a100.notes == ("A100-SXM4: dense BF16 peak 312 TFLOP/s", "A100-PCIe: dense BF16 peak 312 TFLOP/s")
    assert 'write `accelerator = "A100-PCIe"`' in a100.help
    assert "the Trainium1 row was chosen, not Trainium2" in trn.message and "depend on the choice" in trn.message
    assert trn.notes == ("Trainium1: dense BF16 peak 190 TFLOP/s", "Trainium2: dense BF16 peak 667 TFLOP/s")
