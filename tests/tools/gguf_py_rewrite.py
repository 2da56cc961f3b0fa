#!/usr/bin/env python3
"""Rewrites a GGUF model with llama.cpp's own Python writer (gguf-py), the way its converter
(convert_hf_to_gguf.py) writes models, so that the model tests load files made by the writer the
files people download come from, not only by Hearth's.

usage: gguf_py_rewrite.py GGUF_PY_DIR IN.gguf OUT.gguf [--variants DIR]

Every metadata key goes through the GGUFWriter method the converter calls for it, with the kind
of Python value the converter passes (int, float, bool, str, or a list of them): so each key gets
the value type the converter gives it (a count u32, a per-layer list of ints i32, a layer map
bool). A key without a known method is an error, so that the table keeps up with the files.
Tensors are copied as they are.

With --variants DIR, also writes files in which every key that llama.cpp reads as "one value or
one per layer" (counts, layer flags) is written in one other type gguf-py can write it in: each
integer width and signedness as a scalar (when every layer has the same value) and as an array,
flags as bool arrays, and every f32 scalar as f64. One JSON line per file on stdout:
{"file": PATH, "variant": NAME, "keys": [the keys it writes in that type]}.
"""

import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf_py")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--variants")
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402  (llama.cpp's gguf-py, from the reference's sources)
    import numpy as np  # noqa: E402

    T = gguf.GGUFValueType

    def method(name):
        return lambda w, key, value: getattr(w, name)(value)

    def plain(kind):
        return lambda w, key, value: getattr(w, "add_" + kind)(key, value)

    # Keys under "<arch>.": the converter's GGUFWriter method for each.
    arch_keys = {
        "context_length": method("add_context_length"),
        "embedding_length": method("add_embedding_length"),
        "block_count": method("add_block_count"),
        "vocab_size": method("add_vocab_size"),
        "feed_forward_length": method("add_feed_forward_length"),
        "nextn_predict_layers": method("add_nextn_predict_layers"),
        "full_attention_interval": method("add_full_attention_interval"),
        "embedding_length_per_layer_input": method("add_embedding_length_per_layer_input"),
        "final_logit_softcapping": method("add_final_logit_softcapping"),
        "attn_logit_softcapping": method("add_attn_logit_softcapping"),
        "pooling_type": lambda w, key, value: w.add_pooling_type(gguf.PoolingType(value)),
        "expert_count": method("add_expert_count"),
        "expert_used_count": method("add_expert_used_count"),
        "expert_feed_forward_length": method("add_expert_feed_forward_length"),
        "expert_shared_feed_forward_length": method("add_expert_shared_feed_forward_length"),
        "expert_weights_scale": method("add_expert_weights_scale"),
        "attention.head_count": method("add_head_count"),
        "attention.head_count_kv": method("add_head_count_kv"),
        "attention.key_length": method("add_key_length"),
        "attention.value_length": method("add_value_length"),
        "attention.key_length_swa": method("add_key_length_swa"),
        "attention.value_length_swa": method("add_value_length_swa"),
        "attention.layer_norm_rms_epsilon": method("add_layer_norm_rms_eps"),
        "attention.layer_norm_epsilon": method("add_layer_norm_eps"),
        "attention.causal": method("add_causal_attention"),
        "attention.sliding_window": method("add_sliding_window"),
        "attention.sliding_window_pattern": method("add_sliding_window_pattern"),
        "attention.shared_kv_layers": method("add_shared_kv_layers"),
        "attention.recurrent_layers": method("add_recurrent_layers"),
        "attention.temperature_scale": method("add_attn_temperature_scale"),
        "rope.dimension_count": method("add_rope_dimension_count"),
        "rope.dimension_count_swa": method("add_rope_dimension_count_swa"),
        "rope.dimension_sections": method("add_rope_dimension_sections"),
        "rope.freq_base": method("add_rope_freq_base"),
        "rope.freq_base_swa": method("add_rope_freq_base_swa"),
        "rope.scaling.type": lambda w, key, value: w.add_rope_scaling_type(gguf.RopeScalingType(value)),
        "rope.scaling.factor": method("add_rope_scaling_factor"),
        "rope.scaling.original_context_length": method("add_rope_scaling_orig_ctx_len"),
        "rope.scaling.attn_factor": method("add_rope_scaling_attn_factors"),
        "rope.scaling.yarn_beta_fast": method("add_rope_scaling_yarn_beta_fast"),
        "rope.scaling.yarn_beta_slow": method("add_rope_scaling_yarn_beta_slow"),
        "rope.scaling.yarn_log_multiplier": method("add_rope_scaling_yarn_log_mul"),
        "ssm.conv_kernel": method("add_ssm_conv_kernel"),
        "ssm.state_size": method("add_ssm_state_size"),
        "ssm.group_count": method("add_ssm_group_count"),
        "ssm.time_step_rank": method("add_ssm_time_step_rank"),
        "ssm.inner_size": method("add_ssm_inner_size"),
    }
    # Keys under their full names.
    other_keys = {
        "general.name": method("add_name"),
        "general.file_type": method("add_file_type"),
        "general.quantization_version": method("add_quantization_version"),
        "tokenizer.ggml.model": method("add_tokenizer_model"),
        "tokenizer.ggml.pre": method("add_tokenizer_pre"),
        "tokenizer.ggml.tokens": method("add_token_list"),
        "tokenizer.ggml.scores": method("add_token_scores"),
        "tokenizer.ggml.token_type": method("add_token_types"),
        "tokenizer.ggml.token_type_count": method("add_token_type_count"),
        "tokenizer.ggml.merges": method("add_token_merges"),
        "tokenizer.ggml.bos_token_id": method("add_bos_token_id"),
        "tokenizer.ggml.eos_token_id": method("add_eos_token_id"),
        "tokenizer.ggml.eot_token_id": method("add_eot_token_id"),
        "tokenizer.ggml.eom_token_id": method("add_eom_token_id"),
        "tokenizer.ggml.unknown_token_id": method("add_unk_token_id"),
        "tokenizer.ggml.seperator_token_id": method("add_sep_token_id"),
        "tokenizer.ggml.padding_token_id": method("add_pad_token_id"),
        "tokenizer.ggml.mask_token_id": method("add_mask_token_id"),
        "tokenizer.ggml.cls_token_id": plain("uint32"),  # the converter's SpecialVocab writes it as u32
        "tokenizer.ggml.add_bos_token": method("add_add_bos_token"),
        "tokenizer.ggml.add_eos_token": method("add_add_eos_token"),
        "tokenizer.ggml.add_sep_token": method("add_add_sep_token"),
        "tokenizer.ggml.add_space_prefix": method("add_add_space_prefix"),
        "tokenizer.ggml.remove_extra_whitespaces": method("add_remove_extra_whitespaces"),
        "tokenizer.ggml.precompiled_charsmap": method("add_precompiled_charsmap"),
        "tokenizer.chat_template": method("add_chat_template"),
    }
    # What llama.cpp reads as "one value or one per layer" (get_key_or_arr, get_arr of flags).
    count_keys = ["feed_forward_length", "attention.head_count", "attention.head_count_kv",
                  "expert_used_count", "expert_feed_forward_length", "rope.dimension_sections"]
    flag_keys = ["attention.recurrent_layers", "attention.sliding_window_pattern"]

    reader = gguf.GGUFReader(args.src)
    arch = reader.fields["general.architecture"].contents()

    def python_value(field):
        """The field as the converter would hold it: int, float, bool, str or a list of them."""
        main = field.types[0]
        if main == T.ARRAY:
            sub = field.types[-1]
            values = field.contents()
            if sub == T.BOOL:
                return [bool(v) for v in values]
            if sub in (T.FLOAT32, T.FLOAT64):
                return [float(v) for v in values]
            if sub == T.STRING:
                return list(values)
            return [int(v) for v in values]
        value = field.contents()
        if main == T.BOOL:
            return bool(value)
        if main in (T.FLOAT32, T.FLOAT64):
            return float(value)
        if main == T.STRING:
            return value
        return int(value)

    # The metadata in file order: (key, python value, writer call).
    metadata = []
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.alignment"):
            continue
        suffix = key[len(arch) + 1:] if key.startswith(arch + ".") else None
        call = arch_keys.get(suffix) if suffix is not None else other_keys.get(key)
        if call is None:
            sys.exit(f"gguf_py_rewrite: no converter method known for key {key!r}; add it to the table")
        metadata.append((key, python_value(field), call))

    def write(path, override=None):
        """Writes the file, with override(key, value) -> (value, type, subtype) or None per key."""
        w = gguf.GGUFWriter(path, arch)
        for key, value, call in metadata:
            o = override(key, value) if override else None
            if o is None:
                call(w, key, value)
            else:
                w.add_key_value(key, o[0], o[1], sub_type=o[2])
        for t in reader.tensors:
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    write(args.dst)
    if not args.variants:
        return

    limits = {T.UINT8: (0, 2**8 - 1), T.INT8: (-2**7, 2**7 - 1), T.UINT16: (0, 2**16 - 1),
              T.INT16: (-2**15, 2**15 - 1), T.UINT32: (0, 2**32 - 1), T.INT32: (-2**31, 2**31 - 1),
              T.UINT64: (0, 2**64 - 1), T.INT64: (-2**63, 2**63 - 1)}
    block_count = next(v for k, v, _ in metadata if k == arch + ".block_count")

    def per_layer(key, value):
        """(values, is_flag) of a key llama.cpp reads per layer; None for any other key."""
        suffix = key[len(arch) + 1:] if key.startswith(arch + ".") else None
        if suffix in count_keys:
            n = 4 if suffix == "rope.dimension_sections" else block_count
            return (value if isinstance(value, list) else [value] * n), False
        if suffix in flag_keys:
            if isinstance(value, list):
                return [int(v) for v in value], True
            if suffix == "attention.sliding_window_pattern":  # a period: the layers it makes slide
                return [int(value == 0 or i % value < value - 1) for i in range(block_count)], True
            return [int(value)] * block_count, True
        return None

    os.makedirs(args.variants, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.dst))[0]

    def emit(name, override):
        """Writes the variant when it changes some key: one JSON line naming the file and the keys."""
        keys = [k for k, v, _ in metadata if override(k, v) is not None]
        if not keys:
            return
        path = os.path.join(args.variants, f"{stem}.{name}.gguf")
        write(path, override)
        print(json.dumps({"file": path, "variant": name, "keys": keys}), flush=True)

    for vtype, (lo, hi) in limits.items():
        tname = vtype.name.lower()

        def as_array(key, value, vtype=vtype, lo=lo, hi=hi):
            p = per_layer(key, value)
            if p is None or not all(lo <= v <= hi for v in p[0]):
                return None
            return [int(v) for v in p[0]], T.ARRAY, vtype

        def as_scalar(key, value, vtype=vtype, lo=lo, hi=hi):
            if key == arch + ".attention.sliding_window_pattern":
                # A scalar here is a period (every n-th layer full), written in this type; an array
                # of flags has no scalar form.
                ok = not isinstance(value, list) and lo <= value <= hi
                return (int(value), vtype, None) if ok else None
            p = per_layer(key, value)
            if p is None or len(set(p[0])) != 1 or not lo <= p[0][0] <= hi:
                return None
            return int(p[0][0]), vtype, None

        emit(f"{tname}-array", as_array)
        emit(f"{tname}-scalar", as_scalar)

    def as_bool_array(key, value):
        p = per_layer(key, value)
        if p is None or not p[1]:
            return None
        return [bool(v) for v in p[0]], T.ARRAY, T.BOOL

    emit("bool-array", as_bool_array)

    def as_f64(key, value):
        field = reader.fields[key]
        if field.types[0] != T.FLOAT32:
            return None
        return float(np.float32(value)), T.FLOAT64, None

    emit("f64", as_f64)


if __name__ == "__main__":
    main()
