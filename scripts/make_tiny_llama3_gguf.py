"""Writes a tiny random-weight llama-architecture GGUF that carries the real Llama 3.2 tokenizer.

Its text is noise, but its tokens, special tokens, BOS/EOS/EOT/EOM ids, add_bos_token and chat
template are exactly Llama 3.2's, so the llama.cpp path (tokenizing rendered prompts, stopping on
<|eot_id|>/<|eom_id|>, grammar-constrained calls) can be tested without the real weights.

usage: make_tiny_llama3_gguf.py TOKENIZER_DIR CHAT_TEMPLATE OUT.gguf   (or --check OUT.gguf)
"""

import json
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter, LlamaFileType, TokenType

N_VOCAB = 128256
N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_LAYER, N_CTX = 64, 4, 2, 128, 2, 2048
BOS, EOS, EOT, EOM, PAD = 128000, 128009, 128009, 128008, 128004


def vocabulary(tokenizer_dir):
    """Tokens, token types and merges the way llama.cpp's convert_hf_to_gguf.py reads them."""
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    added = {a["id"]: a for a in tok["added_tokens"]}
    tokens, types = [], []
    for i in range(N_VOCAB):
        if i in added:
            tokens.append(added[i]["content"])
            types.append(TokenType.CONTROL if added[i]["special"] else TokenType.USER_DEFINED)
        elif i in by_id:
            tokens.append(by_id[i])
            types.append(TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    return tokens, types, merges


def write(tokenizer_dir, template_path, out):
    tokens, types, merges = vocabulary(tokenizer_dir)
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    w = GGUFWriter(out, "llama")
    w.add_name("tiny-llama3 (random weights, Llama 3.2 vocabulary)")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_eot_token_id(EOT)
    w.add_eom_token_id(EOM)
    w.add_pad_token_id(PAD)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(template)

    # Fixed seed: the same inputs give a byte-identical file.
    rng = np.random.default_rng(0)

    def t(*shape):  # numpy shape is ggml's ne reversed
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    kv = N_EMBD // N_HEAD * N_HEAD_KV
    # Embeddings in f16 keep the file small (~16 MB); the output layer reuses them.
    w.add_tensor("token_embd.weight", t(N_VOCAB, N_EMBD).astype(np.float16))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", t(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_k.weight", t(kv, N_EMBD))
        w.add_tensor(p + "attn_v.weight", t(kv, N_EMBD))
        w.add_tensor(p + "attn_output.weight", t(N_EMBD, N_EMBD))
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", t(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_up.weight", t(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_down.weight", t(N_EMBD, N_FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def check(path):
    """Reads the file back; raises if the vocabulary or special-token metadata is not Llama 3.2's."""
    r = GGUFReader(path)

    def scalar(key):
        f = r.fields[key]
        return f.parts[f.data[0]][0]

    def string(key):
        f = r.fields[key]
        return bytes(f.parts[f.data[0]]).decode("utf-8")

    f = r.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    assert string("general.architecture") == "llama"
    assert string("tokenizer.ggml.model") == "gpt2" and string("tokenizer.ggml.pre") == "llama-bpe"
    assert len(tokens) == N_VOCAB, len(tokens)
    for i, text in [(128000, "<|begin_of_text|>"), (128006, "<|start_header_id|>"), (128007, "<|end_header_id|>"),
                    (128008, "<|eom_id|>"), (128009, "<|eot_id|>"), (128010, "<|python_tag|>")]:
        assert tokens[i] == text, (i, tokens[i])
    assert scalar("tokenizer.ggml.bos_token_id") == BOS
    assert scalar("tokenizer.ggml.eos_token_id") == EOS
    assert scalar("tokenizer.ggml.eot_token_id") == EOT
    assert scalar("tokenizer.ggml.eom_token_id") == EOM
    assert bool(scalar("tokenizer.ggml.add_bos_token")) is True
    assert "<|start_header_id|>" in string("tokenizer.chat_template")
    assert len(r.fields["tokenizer.ggml.merges"].data) > 280000
    assert len(r.tensors) == 2 + 9 * N_LAYER
    print(f"{path}: llama, {len(tokens)} tokens, bos {BOS}, eos/eot {EOS}, eom {EOM}, "
          f"{len(r.tensors)} tensors, {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        tokenizer_dir, template, out = sys.argv[1:4]
        write(tokenizer_dir, template, out + ".part")
        check(out + ".part")
        os.replace(out + ".part", out)
