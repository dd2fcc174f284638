"""Full-size sparse replicas of public MTP targets (tests/mtp_replicas.py): the verdict each
engine release gave its users, through the command line, and what a check of a 671B
target reads (its config, its index and the headers of the shards holding MTP tensors)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from draftfit.checkpoint.scoped import load_scoped
from draftfit.draft.mtp import select_mtp_names
from draftfit.origins.hub import HEADER_PREFETCH
from tests.fake_hub import FakeHub, configure_hf_env
from tests.mtp_replicas import deepseek_v3_fp8, glm4_moe_bf16, mtp_shards, qwen3_6_27b
from tests.opened_files import files_opened
from tests.recipe_round_trip import run_cli

V34, V0102, SGL = "vllm==0.34.0", "vllm==0.10.2", "sglang==0.5.23"
LAUNCH = {
    V34: 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\'',
    # 0.10.2 takes no `mtp` method, and builds GLM's MTP draft only with `model` given
    V0102: "vllm serve T --speculative-config "
    '\'{"method": "deepseek_mtp", "model": "T", "num_speculative_tokens": 1}\'',
    SGL: "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN "
    "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2",
}
INDEX = "model.safetensors.index.json"

# What each release did with each public case (dev/mtp-design.md §3, "expected"; the tiny
# runs named there are in dev/mtp-oracle-results.md):
EXPECTED = {
    # vllm#25993: 0.10.2 refused GLM-4.6 BF16 ("Following weights were not initialized
    # from checkpoint: … model.layers.92.shared_head.head.weight"); 0.34.0 takes the head
    # and embedding from the target (run glm46_no_head_k1); SGLang skips both (run).
    "glm46-bf16-no-mtp-head": {V0102: "incompatible", V34: "compatible", SGL: "compatible"},
    # the near miss: GLM-4.5 BF16 with both tensors served everywhere GLM is
    "glm45-bf16": {V0102: "compatible", V34: "compatible", SGL: "compatible"},
    # the official DeepSeek-V3 FP8 release (its MTP layer quantized like the backbone)
    "deepseek-v3-fp8": {V0102: "compatible", V34: "compatible", SGL: "compatible"},
    # vllm#37667's mechanism: a BF16 MTP layer in an FP8 target, not excluded: vLLM
    # builds it FP8 and loads no value into it (0% acceptance, run ds_v3_fp8_k1 on 0.34.0;
    # read on 0.10.2), SGLang refuses at load (`Downcasting not allowed`, run)
    "deepseek-v3-fp8-bf16-mtp": {
        V0102: "drafts-garbage",
        V34: "drafts-garbage",
        SGL: "incompatible",
    },
    # the MTP layer listed in `modules_to_not_convert` under the checkpoint's names
    # (`model.layers.61.*`): stored BF16, vLLM builds it unquantized as listed, and SGLang's
    # DeepSeek NextN class maps `model.layers.61` to its runtime `model.decoder` (run on a
    # 61-layer tiny target): both serve it
    "deepseek-v3-fp8-bf16-mtp-listed": {V34: "compatible", SGL: "compatible"},
    # ... and stored FP8 like the backbone while listed: both build it unquantized and
    # refuse its scales (`KeyError: ...weight_scale_inv`, run on tiny targets, DF541)
    "deepseek-v3-fp8-mtp-listed": {V34: "incompatible", SGL: "incompatible", V0102: "unverified"},
    # depth 0 with an MTP launch: ZeroDivisionError in vLLM's config (run on both),
    # SGLang's `Only 1 nextn layer is supported` (run)
    "dsv3-depth0": {V0102: "incompatible", V34: "incompatible", SGL: "incompatible"},
    # Qwen3.6-27B as released (multimodal, BF16: the keys in `text_config`, `mtp.*`): served
    # by both (the tiny Qwen3.5 targets of dev/mtp_corpus.py run on both: q35_k1)
    "qwen3.6-27b-bf16": {V34: "compatible", SGL: "compatible"},
    # an export that keeps `mtp_num_hidden_layers` 1 but ships none of the 15 `mtp.*`
    # tensors (ModelOpt#2427's and AReaL#1403's exporters): vLLM's load check refuses an
    # unquantized target so exported, SGLang loads the MTP layer unset (run q35_dropped_k1)
    "qwen3.6-27b-bf16-no-mtp": {V34: "incompatible", SGL: "drafts-garbage"},
}


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "glm46-bf16-no-mtp-head": lambda root: glm4_moe_bf16(root, drop_head=True),
    "glm45-bf16": glm4_moe_bf16,
    "deepseek-v3-fp8": deepseek_v3_fp8,
    "deepseek-v3-fp8-bf16-mtp": lambda root: deepseek_v3_fp8(root, mtp_fp8=False),
    "dsv3-depth0": lambda root: deepseek_v3_fp8(root, depth=0),
    "deepseek-v3-fp8-bf16-mtp-listed": lambda root: _list_mtp_layer(
        deepseek_v3_fp8(root, mtp_fp8=False)
    ),
    "deepseek-v3-fp8-mtp-listed": lambda root: _list_mtp_layer(deepseek_v3_fp8(root)),
    "qwen3.6-27b-bf16": qwen3_6_27b,
    "qwen3.6-27b-bf16-no-mtp": lambda root: qwen3_6_27b(root, mtp=False),
}


def _list_mtp_layer(root: Path) -> Path:
    """List every projection and expert of MTP layer 61 in `modules_to_not_convert`, under
    the checkpoint's names (as an exporter that meant to leave it unquantized writes it)."""
    index = json.loads((root / INDEX).read_text())["weight_map"]
    modules = sorted(
        name.removesuffix(".weight")
        for name in index
        if name.startswith("model.layers.61.")
        and name.endswith(("_proj.weight", "_proj_with_mqa.weight"))
        and ".eh_proj." not in name
    )
    config = json.loads((root / "config.json").read_text())
    config["quantization_config"]["modules_to_not_convert"] = modules
    (root / "config.json").write_text(json.dumps(config))
    return root


class Replicas:
    """Each replica, written on first use (under a second each) into one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.built: dict[str, Path] = {}

    def __getitem__(self, case: str) -> Path:
        if case not in self.built:
            self.built[case] = BUILDERS[case](self.root / case)
        return self.built[case]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Replicas:
    return Replicas(tmp_path_factory.mktemp("mtp-replicas"))


def _verdict(path: Path, engine: str) -> tuple[str, list[str]]:
    return _verdict_of(str(path), engine)


def _verdict_of(source: str, engine: str) -> tuple[str, list[str]]:
    code, out, err = run_cli(
        ["check", source, "--engine", engine, "--serve-args", LAUNCH[engine], "--format", "json"]
    )
    assert code in (0, 1), err
    report = json.loads(out)
    (result,) = report["engines"]
    return result["verdict"], sorted({f["code"] for f in report["findings"]})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "engine"), [(case, engine) for case in EXPECTED for engine in EXPECTED[case]]
)
def test_each_replica_gets_the_verdict_the_release_gave(
    replicas: Replicas, case: str, engine: str
) -> None:
    verdict, codes = _verdict(replicas[case], engine)
    assert verdict == EXPECTED[case][engine], codes


def test_the_replicas_are_full_size_with_every_tensor_indexed(replicas: Replicas) -> None:
    ds = replicas["deepseek-v3-fp8"]
    shards = sorted(ds.glob("*.safetensors"))
    assert len(shards) == 163 and shards[-1].name == "model-00163-of-000163.safetensors"
    # ~690 GB of FP8 and BF16 tensors, holes on disk
    assert 650e9 < sum(p.stat().st_size for p in shards) < 720e9
    index = json.loads((ds / INDEX).read_text())["weight_map"]
    assert len(index) > 90_000 and set(index.values()) == {p.name for p in shards}
    # the MTP layer sits in the last shards
    assert sorted(mtp_shards(ds)) == [
        f"model-{i:05d}-of-000163.safetensors" for i in range(160, 164)
    ]
    glm = replicas["glm46-bf16-no-mtp-head"]
    names = json.loads((glm / INDEX).read_text())["weight_map"]
    assert "model.layers.92.eh_proj.weight" in names
    assert "model.layers.92.shared_head.head.weight" not in names
    assert (
        "model.layers.92.shared_head.head.weight"
        in json.loads((replicas["glm45-bf16"] / INDEX).read_text())["weight_map"]
    )


def test_a_check_of_the_671b_target_opens_only_its_config_index_and_mtp_shards(
    replicas: Replicas,
) -> None:
    path = replicas["deepseek-v3-fp8"]
    with files_opened(path) as opened:
        verdict, _ = _verdict(path, V34)
    assert verdict == "compatible"
    assert set(opened) == {"config.json", INDEX, *mtp_shards(path)}
    assert len(mtp_shards(path)) == 4


# The 163-shard replica is read the same way in the quick run (above); a smaller and a
# larger backbone run with the slow tests.
@pytest.mark.slow
@pytest.mark.parametrize("backbone", [40, 280])
def test_what_is_read_does_not_grow_with_the_backbone_shards(tmp_path: Path, backbone: int) -> None:
    """The same target with its backbone in 40 or 280 shards: the same four MTP shards are
    the only weight files opened, and only their headers are read."""
    path = deepseek_v3_fp8(tmp_path / "ds", backbone_shards=backbone)
    assert len(list(path.glob("*.safetensors"))) == backbone + 4
    with files_opened(path) as opened:
        scoped = load_scoped(path, select_mtp_names)
    mtp = {f"model-{backbone + i:05d}-of-{backbone + 4:06d}.safetensors" for i in range(1, 5)}
    assert set(opened) == {"config.json", INDEX, *mtp}
    assert set(scoped.shards_read) == mtp
    assert len(scoped.names()) > 90_000


def _header_requests(path: Path) -> int:
    """Range requests a header read takes: one when it fits the first 16 KB, else two."""
    with path.open("rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
    return 1 if 8 + length <= HEADER_PREFETCH else 2


def test_from_the_hub_only_the_critical_path_is_requested(
    replicas: Replicas, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Hub id of the 671B target: the file list, the config, the index, and the headers
    of its four MTP shards, read at once; no other request (the other 159 shards are known
    from the index)."""
    path = replicas["deepseek-v3-fp8"]
    hub = FakeHub()
    hub.add_repo("deepseek-ai/DeepSeek-V3", path)
    hub.delay = 0.05  # so that requests sent together are seen together
    with hub:
        configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        verdict, _ = _verdict_of("hf://deepseek-ai/DeepSeek-V3", SGL)
        requests = list(hub.requests)
        in_flight = hub.max_in_flight
    assert verdict == "compatible"
    files = [r.path.rsplit("/", 1)[1] for r in requests if "/resolve/" in r.path]
    listing = [r for r in requests if r.path.startswith("/api/models/")]
    assert len(listing) == 1 and len(files) + 1 == len(requests)
    mtp = mtp_shards(path)
    assert sorted(files) == sorted(
        ["config.json"] * 2
        + [INDEX] * 2
        + [shard for shard in mtp for _ in range(_header_requests(path / shard))]
    )
    ranged = [r for r in requests if r.range]
    assert {r.path.rsplit("/", 1)[1] for r in ranged} == mtp
    # the four header reads were in flight together
    assert in_flight >= 2
