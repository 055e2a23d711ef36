"""NLP models: BERT encoders with a SQuAD head (variable length, reference 384 tokens) and SplitRPC's LSTM."""

from __future__ import annotations

from tools.model_graphs.layers import Graph

VOCAB, MAX_POS, TYPES = 30522, 512, 2
REF_TOKENS = 384


def _bert(model: str, source: str, layers: int, hidden: int, heads: int, ffn: int, variable: bool = True) -> Graph:
    """BERT encoder + QA head (linear hidden -> 2 start/end logits), no pooler (BertForQuestionAnswering)."""
    g = Graph(model, source, ref_len=REF_TOKENS if variable else None)
    t = REF_TOKENS
    x = (t, hidden)
    g.emit("embeddings.lookup", "memory", 2 * t * hidden, (VOCAB + MAX_POS + TYPES) * hidden, 3 * t, t * hidden,
           note="word + position + token-type lookup and sum; weights = whole tables (only looked-up rows are read)")
    x = g.layernorm("embeddings.norm", x)
    for i in range(layers):
        pre = f"layer{i}"
        g.linear(f"{pre}.attn.qkv", x, 3 * hidden, note="Q, K, V projections as one GEMM")
        o = g.attention(f"{pre}.attn", t, hidden, heads)
        o = g.linear(f"{pre}.attn.out", o, hidden)
        o = g.tadd(f"{pre}.attn.add", o)
        x = g.layernorm(f"{pre}.attn.norm", o)
        y = g.linear(f"{pre}.ffn.in", x, ffn)
        y = g.tact(f"{pre}.ffn.gelu", y, "gelu")
        y = g.linear(f"{pre}.ffn.out", y, hidden)
        y = g.tadd(f"{pre}.ffn.add", y)
        x = g.layernorm(f"{pre}.ffn.norm", y)
    g.linear("qa_outputs", x, 2, note="start/end logits")
    return g


BERT_SRC = "Devlin et al. 2019 BERT; HF transformers BertForQuestionAnswering; tools/model_graphs (this project)"
DLE_SRC = ("NVIDIA DeepLearningExamples BERT distilled checkpoints; HF BertForQuestionAnswering; "
           "tools/model_graphs (this project)")


def bert_base() -> Graph:
    return _bert("bert-base", BERT_SRC, 12, 768, 12, 3072)


def bert_large() -> Graph:
    return _bert("bert-large", BERT_SRC, 24, 1024, 16, 4096)


def bert_dist6l() -> Graph:
    return _bert("bert-dist6l", DLE_SRC, 6, 768, 12, 3072)


def bert_dist4l() -> Graph:
    return _bert("bert-dist4l", DLE_SRC, 4, 288, 12, 1152)


def bert_splitrpc() -> Graph:
    """SplitRPC's BERT: assumed BERT-base at a fixed 384 tokens (models.csv note)."""
    return _bert("bert-splitrpc", "SplitRPC Table 1 (assumed BERT-base, 384 tokens); " + BERT_SRC,
                 12, 768, 12, 3072, variable=False)


def lstm() -> Graph:
    """SplitRPC's synthetic LSTM: 10 stacked layers, input and hidden 256, 8 time steps (PyTorch nn.LSTM layout,
    two bias vectors per layer). Per layer the input projection runs as one GEMM over all 8 steps; the recurrent
    projection is 8 dependent steps of a 1-row GEMM (same weights, re-read each step unless cached)."""
    g = Graph("lstm", "SplitRPC Table 1 synthetic LSTM (NNFusion); Hochreiter & Schmidhuber 1997; "
              "tools/model_graphs (this project)")
    steps, hid, inp = 8, 256, 256
    for i in range(10):
        pre = f"lstm{i}"
        d_in = inp if i == 0 else hid
        g.emit(f"{pre}.x_gates", "matmul", 2 * steps * d_in * 4 * hid, 4 * hid * d_in + 4 * hid,
               steps * d_in, steps * 4 * hid, note="W_ih x_t for all 8 steps, + b_ih")
        g.emit(f"{pre}.h_gates", "matmul", 2 * steps * hid * 4 * hid, 4 * hid * hid + 4 * hid,
               steps * hid + steps * 4 * hid, steps * 4 * hid, note="W_hh h_(t-1), 8 sequential steps, + b_hh")
        g.emit(f"{pre}.cell", "memory", steps * 4 * hid * 3, 0, steps * (4 * hid + hid), steps * 2 * hid,
               kind="act", note="sigmoid/tanh gates, c and h update, 8 steps")
    return g


BUILDERS = [bert_base, bert_large, bert_dist6l, bert_dist4l, bert_splitrpc, lstm]
