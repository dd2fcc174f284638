"""The MTP facts of a target, read from its config, its index and the MTP shards' headers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.checkpoint.scoped import load_scoped
from draftfit.draft.mtp import family_of, read_mtp_target, select_mtp_names
from draftfit.engines.launch import settings_from
from draftfit.mtp_check import mtp_target, selects_mtp
from draftfit.report import Verdict
from tests.mtp_factory import mtp_target as write_target

LAUNCH = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 2}\''


def test_only_the_shards_holding_mtp_tensors_are_read(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    scoped = load_scoped(path, select_mtp_names)
    assert scoped.shards_read == ("model-00002-of-00002.safetensors",)
    assert all(name.startswith("model.layers.2.") for name in scoped.checkpoint.tensors)
    # every other tensor is known by name from the index
    assert "model.layers.1.self_attn.q_a_proj.weight" in scoped.names()


def test_the_facts_of_a_deepseek_target(tmp_path: Path) -> None:
    scoped = load_scoped(write_target(tmp_path / "t"), select_mtp_names)
    target = mtp_target(scoped.checkpoint, scoped.names())
    assert target.family is not None and target.family.name == "deepseek_v3"
    assert (target.depth, target.depth_present, target.shipped()) == (1, True, (0,))
    layer = target.layers[0]
    assert layer.prefix == "model.layers.2."
    assert {"eh_proj", "enorm", "self_attn.q_a_proj"} <= layer.modules()
    assert layer.stored_quantized("self_attn.q_a_proj") is False
    assert "self_attn.kv_a_proj_with_mqa" in target.backbone_modules
    assert not target.quantized


def test_absent_depth_is_kept_apart_from_zero(tmp_path: Path) -> None:
    absent = load_scoped(write_target(tmp_path / "a", depth=None), select_mtp_names)
    zero = load_scoped(write_target(tmp_path / "z", depth=0), select_mtp_names)
    a = mtp_target(absent.checkpoint, absent.names())
    z = mtp_target(zero.checkpoint, zero.names())
    assert (a.depth, a.depth_present) == (None, False)
    assert (z.depth, z.depth_present) == (0, True)


def test_quantization_and_its_exclusions_are_read(tmp_path: Path) -> None:
    path = write_target(tmp_path / "q", quant="fp8", exclude="checkpoint")
    scoped = load_scoped(path, select_mtp_names)
    target = mtp_target(scoped.checkpoint, scoped.names())
    assert target.quant.method == "fp8"
    assert "model.layers.2.self_attn.q_a_proj" in target.quant.exclusions
    assert target.quant.exclusion_keys == ("/quantization_config/modules_to_not_convert",)
    quantized = load_scoped(
        write_target(tmp_path / "m", quant="fp8", mtp_quantized=True), select_mtp_names
    )
    layer = mtp_target(quantized.checkpoint, quantized.names()).layers[0]
    assert layer.stored_quantized("self_attn.q_a_proj") is True
    assert layer.stored_quantized("eh_proj") is False


def test_qwen3_next_names_its_mtp_block_under_mtp(tmp_path: Path) -> None:
    scoped = load_scoped(write_target(tmp_path / "q", "qwen3_next", depth=None), select_mtp_names)
    target = mtp_target(scoped.checkpoint, scoped.names())
    assert target.family is not None and target.family.naming == "mtp_prefix"
    assert {"fc", "norm", "self_attn.q_proj"} <= target.layers[0].modules()


def test_an_unknown_family_has_no_mtp_facts() -> None:
    assert family_of({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}) is None
    target = read_mtp_target({"architectures": ["LlamaForCausalLM"]}, ["mtp.fc.weight"], {})
    assert target.family is None and target.layers == {} and target.stray == ("mtp.fc.weight",)


@pytest.mark.parametrize(
    ("method", "launch", "selected"),
    [
        ("mtp", None, True),
        (None, LAUNCH, True),
        (None, LAUNCH.replace('"mtp"', '"deepseek_mtp"'), True),
        (None, "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN", True),
        (None, LAUNCH.replace('"mtp",', '"mtp", "model": "/bf16-copy",'), True),
        (
            None,
            "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN "
            "--speculative-draft-model-path D",
            False,
        ),
        (None, LAUNCH.replace('"mtp"', '"eagle3"'), False),
        ("eagle3", LAUNCH, False),
    ],
)
def test_what_selects_mtp(method: str | None, launch: str | None, selected: bool) -> None:
    serve = settings_from(serve_args=launch) if launch else None
    assert selects_mtp(method, serve) is selected


def test_the_graded_launch_form_checks_the_target_alone(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    report = check_path(path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=LAUNCH))
    assert report.method == "mtp" and report.target is None
    (result,) = report.engines
    assert result.verdict is Verdict.COMPATIBLE
    facts = result.to_dict()["mtp"]
    assert facts["family"] == "deepseek_v3"
    assert facts["layers_built"] == [0] and facts["layer_reused"] is True


@pytest.mark.parametrize("names_target", [False, True])
def test_an_eagle3_launch_of_an_mtp_target_says_what_it_names(
    tmp_path: Path, names_target: bool
) -> None:
    """vLLM's `eagle3` on a target carrying MTP layers is refused (DF146); the message says
    whether the launch named no draft or the target itself as one."""
    path = write_target(tmp_path / "t")
    config = '{"method": "eagle3", "num_speculative_tokens": 2'
    config += f', "model": "{path}"}}' if names_target else "}"
    launch = f"vllm serve {path} --speculative-config '{config}'"
    report = check_path(path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=launch))
    (result,) = report.engines
    assert result.verdict is Verdict.INCOMPATIBLE
    (finding,) = [f for f in report.findings if f.code == "DF146"]
    named = "names the target itself as that draft" in finding.message
    assert named is names_target
    assert ("names none" in finding.message) is not names_target


def test_a_damaged_mtp_shard_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    (path / "model-00002-of-00002.safetensors").write_bytes(b"\x08")
    report = check_path(path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=LAUNCH))
    assert report.engines[0].verdict is not Verdict.COMPATIBLE


def test_an_mtp_check_with_a_target_is_a_usage_error(tmp_path: Path) -> None:
    from draftfit.errors import UsageError

    path = write_target(tmp_path / "t")
    with pytest.raises(UsageError, match="takes the target alone"):
        check_path(path, target=path, method="mtp")
    assert json.loads((path / "config.json").read_text())["num_nextn_predict_layers"] == 1


def test_the_names_found_in_one_pass_are_those_a_test_of_each_name_finds() -> None:
    """The MTP names (and strays, backbone modules) come from a pattern run over all names
    at once; a name that is not ASCII sends every name through the per-name test instead,
    so both ways must agree, whatever the layer numbers look like."""
    import random

    from draftfit.draft.mtp import is_mtp_name

    rng = random.Random(7)
    parts = ["eh_proj.weight", "enorm.weight", "mlp.experts.3.up_proj.weight", "shared_head.norm"]
    for layers in (0, 1, 9, 10, 61, 92, 99, 100, 1234):
        config = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": layers}
        names = []
        for _ in range(400):
            number = rng.choice([layers - 1, layers, layers + 1, rng.randint(0, 3000)])
            digits = str(max(number, 0))
            if rng.random() < 0.1:
                digits = "0" + digits  # a leading zero
            names.append(f"model.layers.{digits}.{rng.choice(parts)}")
        names += ["lm_head.weight", "mtp.fc.weight", "model.MTP.x", "NextN.w", "model.layers.x.y"]
        rng.shuffle(names)
        assert select_mtp_names(config, names) == [n for n in names if is_mtp_name(config, n)]
        found = read_mtp_target(config, names, {})
        # "é" is no MTP name: it only turns the one-pass search off
        each = read_mtp_target(config, [*names, "é"], {})
        assert (found.layers, found.stray, found.backbone_modules) == (
            each.layers,
            each.stray,
            each.backbone_modules,
        )
