"""Which engine data facts each rule rests on, per engine.

`draftfit rule CODE` prints, under the rule's prose, the version ranges, sources and
confidence of these facts from the engine data (`engines/data/<engine>.toml`), so the
docstrings need not restate them. Keys are the rules' check functions (imported, so a
renamed or removed rule fails here); values map an engine to the fact keys behind the
rule's findings for that engine (the facts whose sources its findings cite) and behind what
its prose says about that engine. A test checks that every key named exists in that
engine's data.
"""

from __future__ import annotations

from collections.abc import Mapping

from draftfit.rules.aux import (
    aux_count_mismatch,
    aux_id_out_of_range,
    aux_ids_duplicate,
    aux_ids_ignored_under_cuda_graphs,
    aux_ids_not_ascending,
    aux_ids_not_read_default_matches,
    aux_layers_differ_from_trained,
    aux_runtime_count_mismatch,
)
from draftfit.rules.base import Check, Rule
from draftfit.rules.config import (
    draft_kv_layer_count,
    draft_sliding_window_ignored,
    invalid_speculators_config,
    method_guessed_as_draft_model,
    method_mismatch,
    method_not_detected_from_path,
    method_unsupported,
    missing_architectures,
    missing_config_field,
    missing_draft_vocab_size,
    multi_layer_draft_unsupported,
    speculators_config_with_model_type,
    speculators_format_unsupported,
    unsupported_activation,
    unsupported_draft_architecture,
    unsupported_layer_model_type,
    unsupported_speculators_type,
)
from draftfit.rules.norms import (
    norm_before_residual_default,
    norm_flag_ignored,
)
from draftfit.rules.serving import (
    decoding_type_unknown,
    draft_mla_attention_backend,
    draft_path_key_unread,
    draft_path_missing,
    draft_quantization_flag_inherited,
    draft_tensor_parallel_ignored,
    draft_tensor_parallel_refused,
    max_draft_len_missing,
    pipeline_parallel_aux_states,
    serve_setting_invalid,
)
from draftfit.rules.target import (
    draft_built_with_target_quantization,
    draft_context_refused,
    draft_context_shorter_than_target,
    draft_head_size_fallback,
    draft_head_size_unsupported,
    draft_inherits_target_quantization,
    draft_kv_page_size_refused,
    draft_kv_transfer_size_differs,
    draft_lm_head_share_check_fails,
    shared_embedding_width_mismatch,
    target_capability_unknown,
    target_hidden_size_mismatch,
    target_not_eagle3_capable,
    target_quantization_not_modelled,
    target_rotation_unchecked,
    target_rotation_uncompensated,
)
from draftfit.rules.tensors import (
    head_dim_not_declared,
    ignored_tensor,
    missing_norm_weight,
    missing_required_tensor,
    missing_tensor_uninitialised,
    tensor_name_prefix,
    tensor_names_not_bound,
    tensor_shape_mismatch,
    tensor_shape_truncated,
    unknown_tensor_name,
)
from draftfit.rules.vocab import (
    d2t_ignored_by_engine,
    lm_head_missing_reduced_vocab,
    missing_d2t,
    vocab_size_mismatch,
)

RULE_FACTS: dict[Check, Mapping[str, tuple[str, ...]]] = {
    unsupported_draft_architecture: {  # DF101
        "vllm": (
            "eagle3_arch_rewrite",
            "eagle3_draft_architectures",
            "eagle_arch_rewrite",
            "eagle_draft_architectures",
            "mtp_model_types",
        ),
        "sglang": (
            "eagle3_arch_rewrite",
            "eagle3_draft_architectures",
            "eagle_draft_architectures",
        ),
        "trtllm": (
            "draft_class_selection",
            "eagle3_draft_architectures",
            "one_model_default",
        ),
    },
    missing_architectures: {  # DF102
        "vllm": ("eagle3_arch_rewrite",),
        "sglang": ("missing_architectures",),
        "trtllm": ("missing_architectures", "draft_class_selection", "one_model_default"),
    },
    unsupported_speculators_type: {  # DF103
        "vllm": ("speculators_types",),
    },
    invalid_speculators_config: {  # DF104
        "vllm": ("speculators_structure",),
    },
    speculators_format_unsupported: {  # DF105
        "vllm": ("speculators_format",),
        "sglang": ("speculators_format",),
        "trtllm": ("speculators_format",),
    },
    unsupported_layer_model_type: {  # DF106
        "vllm": ("speculators_architecture",),
    },
    method_mismatch: {  # DF107
        "vllm": (
            "draft_model_method",
            "eagle_draft_architectures",
            "method_from_path",
            "speculators_method_checked",
            "speculators_types",
        ),
        "sglang": ("algorithm_names",),
    },
    method_not_detected_from_path: {  # DF108
        "vllm": ("method_from_path",),
    },
    method_unsupported: {  # DF109
        "vllm": (
            "eagle3_supported",
            "eagle_supported",
        ),
        "sglang": ("eagle3_supported",),
        "trtllm": ("eagle_supported",),
    },
    missing_draft_vocab_size: {  # DF110
        "vllm": ("draft_vocab_size_required",),
        "sglang": ("draft_vocab_size_required",),
        "trtllm": ("draft_vocab_size_required",),
    },
    speculators_config_with_model_type: {  # DF111
        "vllm": ("speculators_format",),
    },
    missing_config_field: {  # DF112
        "vllm": (
            "aux_count_rule",
            "mla_config_defaults",
            "speculators_structure",
        ),
        "sglang": (
            "mla_config_defaults",
            "target_hidden_size_supported",
        ),
        "trtllm": (
            "mla_config_defaults",
            "target_hidden_size_supported",
        ),
    },
    method_guessed_as_draft_model: {  # DF114
        "vllm": (
            "draft_model_method",
            "method_from_path",
        ),
    },
    unsupported_activation: {  # DF115
        "vllm": ("draft_activation",),
        "sglang": ("draft_activation",),
    },
    multi_layer_draft_unsupported: {  # DF116
        "sglang": ("multi_layer_policy",),
    },
    draft_kv_layer_count: {  # DF117
        "sglang": ("draft_kv_layers_source",),
    },
    unknown_tensor_name: {  # DF201
        "vllm": (
            "compressed_tensors_params",
            "d2t_loaded",
            "d2t_parameter",
            "draft_quant_config_source",
            "draft_quant_lm_head",
            "draft_quant_methods",
            "unknown_tensor_policy",
        ),
        "sglang": ("unknown_tensor_policy",),
    },
    tensor_name_prefix: {  # DF202
        "vllm": ("eagle3_weight_mapping",),
        "sglang": ("unknown_tensor_policy",),
        "trtllm": ("model_prefix_accepted",),
    },
    tensor_shape_mismatch: {  # DF203
        "vllm": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "eagle_weight_mapping",
            "embedding_sharing",
            "lm_head_shared_when_missing",
        ),
        "sglang": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "lm_head_shared_when_missing",
        ),
        "trtllm": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "fc_exists_when",
            "lm_head_rule",
            "mla_config_defaults",
            "multi_layer_policy",
        ),
    },
    tensor_shape_truncated: {  # DF204
        "vllm": (
            "eagle3_weight_mapping",
            "mla_config_defaults",
        ),
        "sglang": (
            "eagle3_weight_mapping",
            "mla_config_defaults",
        ),
    },
    missing_tensor_uninitialised: {  # DF205
        "vllm": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "embedding_sharing",
            "lm_head_shared_when_missing",
            "mla_config_defaults",
        ),
        "sglang": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "embedding_sharing",
            "fc_bias_rule",
            "lm_head_shared_when_missing",
            "mla_config_defaults",
        ),
        "trtllm": (
            "aux_count_rule",
            "eagle3_weight_mapping",
            "embedding_sharing",
            "fc_exists_when",
            "lm_head_rule",
            "mla_config_defaults",
            "multi_layer_policy",
        ),
    },
    missing_norm_weight: {  # DF206
        "vllm": (
            "eagle3_weight_mapping",
            "norm_before_fc_supported",
        ),
        "sglang": (
            "eagle3_weight_mapping",
            "norm_before_fc_supported",
        ),
        "trtllm": ("eagle3_weight_mapping",),
    },
    ignored_tensor: {  # DF207
        "vllm": (
            "flag_gated_tensors",
            "stray_bias_policy",
        ),
        "sglang": (
            "draft_quant_fc",
            "draft_quant_lm_head",
            "stray_bias_policy",
            "unknown_tensor_policy",
        ),
        "trtllm": ("unknown_tensor_policy",),
    },
    head_dim_not_declared: {  # DF208
        "vllm": ("eagle3_weight_mapping",),
        "sglang": ("eagle3_weight_mapping",),
        "trtllm": ("eagle3_weight_mapping",),
    },
    missing_required_tensor: {  # DF209
        "sglang": ("d2t_handling",),
        "trtllm": (
            "d2t_parameter",
            "missing_tensor_policy",
        ),
    },
    tensor_names_not_bound: {  # DF210
        "sglang": ("eagle3_weight_mapping",),
        "trtllm": ("eagle3_weight_mapping",),
    },
    aux_layers_differ_from_trained: {  # DF301
        "vllm": (
            "aux_ids_read_from_mrv1",
            "aux_ids_read_from_mrv2",
            "runner_default",
        ),
        "sglang": (
            "aux_ids_convention",
            "aux_ids_default",
            "aux_ids_read_from",
        ),
        "trtllm": (
            "aux_ids_default",
            "aux_ids_read_from",
            "aux_ids_user_key",
        ),
    },
    aux_ids_not_read_default_matches: {  # DF302
        "vllm": (
            "aux_ids_read_from_mrv1",
            "aux_ids_read_from_mrv2",
            "runner_default",
        ),
        "sglang": (
            "aux_ids_default",
            "aux_ids_read_from",
        ),
        "trtllm": (
            "aux_ids_default",
            "aux_ids_read_from",
            "aux_ids_user_key",
        ),
    },
    aux_id_out_of_range: {  # DF303
        "vllm": (
            "aux_final_layer_not_captured",
            "aux_first_layer_not_captured",
            "aux_ids_read_from_mrv1",
            "aux_ids_read_from_mrv2",
            "runner_default",
        ),
    },
    aux_count_mismatch: {  # DF304
        "vllm": (
            "aux_ids_read_from_mrv1",
            "aux_ids_read_from_mrv2",
            "runner_default",
        ),
        "sglang": (
            "aux_ids_convention",
            "aux_ids_default",
            "aux_ids_read_from",
        ),
        "trtllm": (
            "aux_ids_default",
            "aux_ids_read_from",
            "aux_ids_user_key",
        ),
    },
    aux_runtime_count_mismatch: {  # DF305
        "vllm": (
            "aux_ids_read_from_mrv1",
            "aux_ids_read_from_mrv2",
            "runner_default",
        ),
    },
    aux_ids_duplicate: {"vllm": ("aux_ids_dedupe",)},  # DF306
    aux_ids_not_ascending: {  # DF310
        "vllm": ("aux_concat_order",),
        "sglang": ("aux_concat_order",),
        "trtllm": ("aux_concat_order",),
    },
    aux_ids_ignored_under_cuda_graphs: {  # DF309
        "sglang": ("aux_ids_cuda_graph_ignored",),
    },
    missing_d2t: {  # DF401
        "vllm": (
            "d2t_loaded",
            "d2t_parameter",
        ),
        "sglang": ("d2t_handling",),
    },
    lm_head_missing_reduced_vocab: {  # DF402
        "vllm": ("lm_head_shared_when_missing",),
        "sglang": ("tied_lm_head",),
        "trtllm": ("lm_head_rule",),
    },
    vocab_size_mismatch: {  # DF405
        "vllm": ("eagle3_weight_mapping",),
        "sglang": ("eagle3_weight_mapping",),
        "trtllm": ("eagle3_weight_mapping",),
    },
    d2t_ignored_by_engine: {  # DF406
        "vllm": ("d2t_loaded",),
    },
    target_not_eagle3_capable: {  # DF501
        "vllm": (
            "verifier_allow_list",
            "verifier_allow_list_enforced",
            "verifier_eagle3_classes",
            "verifier_eagle3_unknown_before",
            "verifier_not_eagle3_classes",
        ),
        "sglang": (
            "target_without_capture",
            "verifier_eagle3_classes",
        ),
        "trtllm": ("verifier_not_eagle3_classes",),
    },
    target_hidden_size_mismatch: {  # DF502
        "vllm": (
            "eagle3_weight_mapping",
            "eagle_weight_mapping",
        ),
        "sglang": ("eagle3_weight_mapping",),
        "trtllm": ("eagle3_weight_mapping",),
    },
    shared_embedding_width_mismatch: {  # DF503
        "vllm": (
            "embedding_sharing",
            "lm_head_shared_when_missing",
        ),
        "sglang": ("embedding_sharing",),
        "trtllm": ("embedding_sharing",),
    },
    draft_context_shorter_than_target: {  # DF504
        "vllm": ("max_position_raised",),
        "sglang": ("draft_context_shorter_than_target",),
    },
    target_capability_unknown: {  # DF505
        "vllm": (
            "verifier_eagle3_classes",
            "verifier_eagle3_unknown_before",
        ),
        "sglang": ("verifier_eagle3_classes",),
        "trtllm": (
            "verifier_eagle3_classes",
            "verifier_not_eagle3_classes",
        ),
    },
    draft_context_refused: {  # DF506
        "sglang": ("draft_context_shorter_than_target",),
    },
    draft_inherits_target_quantization: {  # DF515
        "sglang": ("draft_quantization_inherited", "draft_quantization_opt_out"),
    },
    target_rotation_uncompensated: {  # DF516
        "vllm": ("draft_rotation_compensated",),
        "sglang": ("draft_rotation_compensated",),
    },
    draft_built_with_target_quantization: {  # DF517
        "vllm": ("draft_quant_config_source", "target_quant_in_draft"),
    },
    target_quantization_not_modelled: {  # DF518
        "vllm": ("draft_quant_config_source", "target_quant_in_draft"),
    },
    target_rotation_unchecked: {  # DF519
        "vllm": ("draft_rotation_compensated",),
        "sglang": ("draft_rotation_compensated",),
    },
    draft_lm_head_share_check_fails: {  # DF520
        "vllm": (
            "compressed_tensors_params",
            "draft_quant_config_source",
            "draft_quant_lm_head",
            "draft_quant_methods",
            "mrv1_runner_env",
            "mrv2_head_share_no_weight",
            "runner_default",
        ),
    },
    draft_kv_page_size_refused: {  # DF530
        "vllm": ("kv_page_size_uniform",),
        "sglang": ("draft_kv_geometry_own",),
    },
    draft_kv_transfer_size_differs: {  # DF533
        "vllm": ("nixl_uniform_kv_tensor_size", "kv_page_size_uniform"),
    },
    draft_head_size_unsupported: {  # DF531
        "vllm": ("draft_head_size_backend",),
    },
    draft_head_size_fallback: {  # DF532
        "vllm": ("draft_head_size_backend",),
    },
    pipeline_parallel_aux_states: {  # DF550
        "vllm": ("aux_states_over_pp", "pp_aux_architectures"),
        "sglang": ("pp_with_eagle3",),
        "trtllm": ("pp_with_two_model_eagle3", "one_model_default"),
    },
    draft_tensor_parallel_ignored: {  # DF551
        "vllm": ("draft_tp_eagle_honoured",),
    },
    draft_tensor_parallel_refused: {  # DF552
        "vllm": ("draft_tp_choices",),
    },
    draft_mla_attention_backend: {  # DF553
        "vllm": (
            "mla_only_attention_backends",
            "draft_attention_backend_default",
            "draft_attention_backend_flag",
            "attention_backend_setting",
            "runner_default",
        ),
        "sglang": (
            "mla_only_attention_backends",
            "draft_attention_backend_default",
            "draft_attention_backend_flag",
        ),
    },
    draft_quantization_flag_inherited: {  # DF554
        "sglang": ("draft_quantization_inherited", "draft_quantization_opt_out"),
    },
    max_draft_len_missing: {  # DF555
        "trtllm": ("max_draft_len_required",),
    },
    draft_path_key_unread: {  # DF556
        "trtllm": ("draft_path_key", "draft_path_aliases", "spec_config_unknown_keys"),
    },
    draft_path_missing: {  # DF557
        "trtllm": ("draft_path_key",),
    },
    decoding_type_unknown: {  # DF558
        "trtllm": ("decoding_types",),
    },
    serve_setting_invalid: {  # DF559
        "vllm": ("eagle3_supported", "eagle_supported"),
        "sglang": ("algorithm_names",),
    },
    draft_sliding_window_ignored: {  # DF130
        "vllm": ("draft_sliding_window_honoured",),
        "sglang": ("draft_sliding_window_honoured", "sliding_window_source"),
        "trtllm": ("draft_sliding_window_honoured",),
    },
    norm_flag_ignored: {  # DF601
        "vllm": (
            "fc_norm_supported",
            "norm_before_fc_supported",
            "norm_output_supported",
        ),
        "sglang": (
            "fc_norm_supported",
            "norm_before_fc_supported",
            "norm_output_supported",
        ),
        "trtllm": (
            "fc_norm_supported",
            "norm_before_fc_supported",
            "norm_output_supported",
        ),
    },
    norm_before_residual_default: {  # DF602
        "vllm": (
            "speculators_copied_fields",
            "speculators_norm_before_residual_default",
        ),
    },
}


def facts_for(item: Rule) -> Mapping[str, tuple[str, ...]]:
    """The fact keys `item` rests on, per engine (empty when it reads no engine data)."""
    return RULE_FACTS.get(item.check, {})
