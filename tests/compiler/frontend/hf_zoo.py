"""A zoo of Hugging Face ``transformers`` models, each built from a small random config in code
(no download), for the torch.export and ONNX paths (issue #13).

:func:`model` builds one (wrapped to take positional inputs and return one tensor);
:func:`inputs` makes its inputs at a batch size and sequence length; :func:`dynamic_shapes`
gives the dims that may vary (``batch``, and ``seq`` / ``dec`` for text models; image sizes
stay static); :data:`EXPORTER` names the ``torch.onnx.export`` mode each model exports with.
Used by tests/compiler/frontend/test_transformers_zoo.py and bench/transformers_zoo.py."""

from __future__ import annotations

import torch
from torch import nn

V = 100  # vocabulary

ZOO = [
    "gpt2",
    "bert",
    "distilbert",
    "roberta",
    "t5-encoder",
    "t5",
    "llama",
    "mistral",
    "qwen2",
    "phi",
    "vit",
    "swin",
    "mobilevit",
    "convnext",
    "resnet",
    "whisper-encoder",
    "clip-vision",
    "clip-text",
    # issue 29: mixture-of-experts decoders, vision transformers with relative position bias,
    # convolutional audio feature extractors, encoder-decoders other than T5, and others
    "mixtral",
    "qwen2-moe",
    "olmoe",
    "granitemoe",
    "beit",
    "data2vec-vision",
    "swinv2",
    "wav2vec2",
    "hubert",
    "wavlm",
    "data2vec-audio",
    "bart",
    "marian",
    "pegasus",
    "mbart",
    "whisper",
    "qwen3",
    "gemma2",
    "phi3",
    "stablelm",
    "gpt-neox",
    "falcon",
    "electra",
    "deberta-v2",
    "deit",
    "convnextv2",
]

FAMILY = {
    "gpt2": "decoder",
    "llama": "decoder",
    "mistral": "decoder",
    "qwen2": "decoder",
    "phi": "decoder",
    "bert": "encoder",
    "distilbert": "encoder",
    "roberta": "encoder",
    "t5-encoder": "encoder",
    "clip-text": "encoder",
    "t5": "encoder-decoder",
    "whisper-encoder": "audio encoder",
    "vit": "vision transformer",
    "swin": "vision transformer",
    "clip-vision": "vision transformer",
    "mobilevit": "vision hybrid",
    "convnext": "CNN",
    "resnet": "CNN",
    "mixtral": "MoE decoder",
    "qwen2-moe": "MoE decoder",
    "olmoe": "MoE decoder",
    "granitemoe": "MoE decoder",
    "beit": "vision transformer",
    "data2vec-vision": "vision transformer",
    "swinv2": "vision transformer",
    "wav2vec2": "audio encoder",
    "hubert": "audio encoder",
    "wavlm": "audio encoder",
    "data2vec-audio": "audio encoder",
    "bart": "encoder-decoder",
    "marian": "encoder-decoder",
    "pegasus": "encoder-decoder",
    "mbart": "encoder-decoder",
    "whisper": "encoder-decoder",
    "qwen3": "decoder",
    "gemma2": "decoder",
    "phi3": "decoder",
    "stablelm": "decoder",
    "gpt-neox": "decoder",
    "falcon": "decoder",
    "electra": "encoder",
    "deberta-v2": "encoder",
    "deit": "vision transformer",
    "convnextv2": "CNN",
}

# torch.onnx.export's dynamo exporter (the default) fails inside torch on these: its
# decompositions re-trace the attention's ``view`` of a transposed tensor and torch raises
# "Cannot view a tensor with shape ... and strides ...". They export with the TorchScript
# exporter (dynamo=False), which users fall back to.
EXPORTER = {"t5-encoder": "torchscript", "t5": "torchscript", "swin": "torchscript"}
# BEiT-style relative position bias: the dynamo exporter fails to decompose the FX graph
EXPORTER.update({"beit": "torchscript", "data2vec-vision": "torchscript"})

# Models no torch.onnx.export mode exports, and why (the ONNX path is not run for them).
NO_ONNX = {
    name: "torch.onnx.export fails: the dynamo exporter cannot convert the mixture-of-experts "
    "routing (ConversionError), the TorchScript one has no aten::diff"
    for name in ("mixtral", "olmoe", "granitemoe")
}

# Same family as a model the tests run: exported and checked by bench/transformers_zoo.py only,
# to keep the test file fast.
BENCH_ONLY = {
    "olmoe",
    "granitemoe",
    "data2vec-vision",
    "hubert",
    "pegasus",
    "mbart",
    "stablelm",
    "falcon",
    "electra",
}

# the inputs of each model by name: "text" (ids), "mask", "decoder" (ids), "image", "features"
_INPUTS = {
    "gpt2": ["text"],
    "bert": ["text", "mask"],
    "distilbert": ["text", "mask"],
    "roberta": ["text", "mask"],
    "t5-encoder": ["text"],
    "t5": ["text", "decoder"],
    "llama": ["text"],
    "mistral": ["text"],
    "qwen2": ["text"],
    "phi": ["text"],
    "vit": ["image"],
    "swin": ["image"],
    "mobilevit": ["image"],
    "convnext": ["image"],
    "resnet": ["image"],
    "whisper-encoder": ["features"],
    "clip-vision": ["image"],
    "clip-text": ["text"],
    "mixtral": ["text"],
    "qwen2-moe": ["text"],
    "olmoe": ["text"],
    "granitemoe": ["text"],
    "beit": ["image"],
    "data2vec-vision": ["image"],
    "swinv2": ["image"],
    "wav2vec2": ["audio"],
    "hubert": ["audio"],
    "wavlm": ["audio"],
    "data2vec-audio": ["audio"],
    "bart": ["text", "decoder"],
    "marian": ["text", "decoder"],
    "pegasus": ["text", "decoder"],
    "mbart": ["text", "decoder"],
    "whisper": ["features", "decoder"],
    "qwen3": ["text"],
    "gemma2": ["text"],
    "phi3": ["text"],
    "stablelm": ["text"],
    "gpt-neox": ["text"],
    "falcon": ["text"],
    "electra": ["text", "mask"],
    "deberta-v2": ["text", "mask"],
    "deit": ["image"],
    "convnextv2": ["image"],
}
_KEYWORD = {
    "text": "input_ids",
    "mask": "attention_mask",
    "decoder": "decoder_input_ids",
    "image": "pixel_values",
    "features": "input_features",
    "audio": "input_values",
}
_IMAGE_SIZE: dict[str, int] = {}  # else 32 (MobileViT at 32 interpolates its 1x1 maps to 2x2)
MAX_SEQ = {"clip-text": 16}  # its max_position_embeddings; else 64


class ByName(nn.Module):
    """Calls a transformers model with keyword inputs and returns one output tensor."""

    def __init__(self, model: nn.Module, names: list[str], out: str):
        super().__init__()
        self.model, self.names, self.out = model, names, out

    def forward(self, *args):
        return getattr(self.model(**dict(zip(self.names, args, strict=True))), self.out)


_ENCODER = dict(
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    intermediate_size=128,
    vocab_size=V,
    max_position_embeddings=64,
)
_DECODER = dict(_ENCODER, num_key_value_heads=2, use_cache=False)
_T5 = dict(
    num_layers=2,
    num_decoder_layers=2,
    d_model=64,
    d_kv=16,
    num_heads=4,
    d_ff=128,
    vocab_size=V,
    decoder_start_token_id=0,
    use_cache=False,
)


_WHISPER = dict(
    encoder_layers=2,
    decoder_layers=2,
    d_model=64,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    num_mel_bins=16,
    max_source_positions=32,
    vocab_size=V,
    max_target_positions=32,
)


def _module(name: str) -> tuple[nn.Module, str]:
    """The transformers model and the output it returns."""
    import transformers as T

    if name == "gpt2":
        cfg = T.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=V, use_cache=False)
        return T.GPT2LMHeadModel(cfg), "logits"
    if name == "bert":
        return T.BertModel(T.BertConfig(**_ENCODER)), "last_hidden_state"
    if name == "distilbert":
        cfg = T.DistilBertConfig(
            n_layers=2, dim=64, n_heads=4, hidden_dim=128, vocab_size=V, max_position_embeddings=64
        )
        return T.DistilBertModel(cfg), "last_hidden_state"
    if name == "roberta":
        return T.RobertaModel(T.RobertaConfig(**_ENCODER, pad_token_id=1)), "last_hidden_state"
    if name == "t5-encoder":
        return T.T5EncoderModel(T.T5Config(**_T5)), "last_hidden_state"
    if name == "t5":
        return T.T5ForConditionalGeneration(T.T5Config(**_T5)), "logits"
    if name == "llama":
        return T.LlamaForCausalLM(T.LlamaConfig(**_DECODER)), "logits"
    if name == "mistral":
        return T.MistralForCausalLM(T.MistralConfig(**_DECODER, sliding_window=None)), "logits"
    if name == "qwen2":
        return T.Qwen2ForCausalLM(T.Qwen2Config(**_DECODER)), "logits"
    if name == "phi":
        return T.PhiForCausalLM(T.PhiConfig(**_DECODER)), "logits"
    if name == "vit":
        cfg = T.ViTConfig(**_ENCODER, image_size=32, patch_size=8)
        return T.ViTModel(cfg), "last_hidden_state"
    if name == "swin":
        cfg = T.SwinConfig(
            image_size=32,
            patch_size=4,
            embed_dim=32,
            depths=[1, 1],
            num_heads=[2, 4],
            window_size=4,
        )
        return T.SwinModel(cfg), "last_hidden_state"
    if name == "mobilevit":
        cfg = T.MobileViTConfig(
            image_size=64,
            patch_size=2,
            hidden_sizes=[32, 48, 64],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
            num_attention_heads=4,
            # the default (0.02) shrinks activations ~1e-11 per stage: the output would be
            # exactly 0 and every comparison trivially true
            initializer_range=0.3,
        )
        return T.MobileViTModel(cfg), "last_hidden_state"
    if name == "convnext":
        cfg = T.ConvNextConfig(num_stages=2, hidden_sizes=[32, 64], depths=[1, 1], image_size=32)
        return T.ConvNextModel(cfg), "last_hidden_state"
    if name == "resnet":
        cfg = T.ResNetConfig(embedding_size=32, hidden_sizes=[32, 64], depths=[1, 1])
        return T.ResNetModel(cfg), "last_hidden_state"
    if name == "whisper-encoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        return WhisperEncoder(T.WhisperConfig(**_WHISPER)), "last_hidden_state"
    if name == "clip-vision":
        cfg = T.CLIPVisionConfig(**_ENCODER, image_size=32, patch_size=8)
        return T.CLIPVisionModel(cfg), "last_hidden_state"
    if name == "clip-text":
        cfg = T.CLIPTextConfig(**dict(_ENCODER, max_position_embeddings=16))
        return T.CLIPTextModel(cfg), "last_hidden_state"
    return _issue29_module(name)


_DECODER1 = dict(_DECODER, num_hidden_layers=1)  # the issue-29 decoders: one layer
_MOE = dict(_DECODER1, num_experts_per_tok=2)
# the encoder-decoders: one layer each side, a tiny vocabulary (its special ids inside it)
_SEQ2SEQ = dict(
    vocab_size=V,
    d_model=64,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    max_position_embeddings=64,
    pad_token_id=1,
    bos_token_id=0,
    eos_token_id=2,
    decoder_start_token_id=2,
    use_cache=False,
)
# wav2vec2-style feature extractors: two convolutions (kernel 10 / 3, stride 5 / 2) turn
# AUDIO_SAMPLES samples into 39 frames; a grouped convolutional position embedding
_AUDIO = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    conv_dim=(16, 16),
    conv_stride=(5, 2),
    conv_kernel=(10, 3),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=4,
    vocab_size=V,
)
AUDIO_SAMPLES = 400
_VISION_REL = dict(_ENCODER, image_size=32, patch_size=8, use_relative_position_bias=True)


def _issue29_module(name: str) -> tuple[nn.Module, str]:
    import transformers as T

    builders = {
        "mixtral": lambda: T.MixtralForCausalLM(T.MixtralConfig(**_MOE, num_local_experts=4)),
        # the experts as batched matmuls (``experts_implementation="batched_mm"``): every
        # expert on every token, weighted by the router (the default, grouped_mm, sorts the
        # tokens by expert and calls a custom op: see mixtral)
        "qwen2-moe": lambda: T.Qwen2MoeForCausalLM(
            T.Qwen2MoeConfig(
                **_MOE,
                num_experts=4,
                moe_intermediate_size=32,
                shared_expert_intermediate_size=64,
                decoder_sparse_step=1,
                experts_implementation="batched_mm",
            )
        ),
        "olmoe": lambda: T.OlmoeForCausalLM(T.OlmoeConfig(**_MOE, num_experts=4)),
        "granitemoe": lambda: T.GraniteMoeForCausalLM(
            T.GraniteMoeConfig(**_MOE, num_local_experts=4)
        ),
        "beit": lambda: T.BeitModel(T.BeitConfig(**_VISION_REL)),
        "data2vec-vision": lambda: T.Data2VecVisionModel(T.Data2VecVisionConfig(**_VISION_REL)),
        "swinv2": lambda: T.Swinv2Model(
            T.Swinv2Config(
                image_size=32,
                patch_size=4,
                embed_dim=32,
                depths=[1, 1],
                num_heads=[2, 4],
                window_size=4,
            )
        ),
        "wav2vec2": lambda: T.Wav2Vec2Model(T.Wav2Vec2Config(**_AUDIO)),
        "hubert": lambda: T.HubertModel(T.HubertConfig(**_AUDIO)),
        "wavlm": lambda: T.WavLMModel(
            T.WavLMConfig(**_AUDIO, num_buckets=32, max_bucket_distance=64)
        ),
        "data2vec-audio": lambda: T.Data2VecAudioModel(
            T.Data2VecAudioConfig(**dict(_AUDIO, num_conv_pos_embeddings=2), conv_pos_kernel_size=5)
        ),
        "bart": lambda: T.BartForConditionalGeneration(T.BartConfig(**_SEQ2SEQ)),
        "marian": lambda: T.MarianMTModel(T.MarianConfig(**_SEQ2SEQ)),
        "pegasus": lambda: T.PegasusForConditionalGeneration(T.PegasusConfig(**_SEQ2SEQ)),
        "mbart": lambda: T.MBartForConditionalGeneration(T.MBartConfig(**_SEQ2SEQ)),
        "whisper": lambda: T.WhisperForConditionalGeneration(
            T.WhisperConfig(**_WHISPER, decoder_start_token_id=2, pad_token_id=1, use_cache=False)
        ),
        "qwen3": lambda: T.Qwen3ForCausalLM(T.Qwen3Config(**_DECODER1, head_dim=16)),
        "gemma2": lambda: T.Gemma2ForCausalLM(T.Gemma2Config(**_DECODER1, head_dim=16)),
        "phi3": lambda: T.Phi3ForCausalLM(T.Phi3Config(**_DECODER1, pad_token_id=0)),
        "stablelm": lambda: T.StableLmForCausalLM(T.StableLmConfig(**_DECODER1)),
        "gpt-neox": lambda: T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**_ENCODER, use_cache=False)),
        "falcon": lambda: T.FalconForCausalLM(
            T.FalconConfig(
                hidden_size=64,
                num_attention_heads=4,
                num_hidden_layers=2,
                vocab_size=V,
                use_cache=False,
            )
        ),
        "electra": lambda: T.ElectraModel(T.ElectraConfig(**_ENCODER, embedding_size=32)),
        "deberta-v2": lambda: T.DebertaV2Model(
            T.DebertaV2Config(
                **_ENCODER,
                relative_attention=True,
                position_buckets=16,
                pos_att_type=["p2c", "c2p"],
            )
        ),
        "deit": lambda: T.DeiTModel(T.DeiTConfig(**_ENCODER, image_size=32, patch_size=8)),
        "convnextv2": lambda: T.ConvNextV2Model(
            T.ConvNextV2Config(num_stages=2, hidden_sizes=[32, 64], depths=[1, 1], image_size=32)
        ),
    }
    if name not in builders:
        raise KeyError(name)
    out = "logits" if FAMILY[name] in ("decoder", "MoE decoder", "encoder-decoder") else None
    return builders[name](), out or "last_hidden_state"


def model(name: str) -> nn.Module:
    """The model (random weights from seed 0, eval mode), taking its inputs positionally."""
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    module, out = _module(name)
    return ByName(module, [_KEYWORD[k] for k in _INPUTS[name]], out).eval()


def inputs(name: str, batch: int = 2, seq: int = 8) -> tuple[torch.Tensor, ...]:
    """Inputs of ``name`` at a batch size and sequence length (the decoder's is half)."""
    g = torch.Generator().manual_seed(batch * 100 + seq)
    out = []
    for kind in _INPUTS[name]:
        if kind == "text":
            ids = torch.randint(0, V, (batch, seq), generator=g)
            out.append(ids.clamp(min=2) if name == "roberta" else ids)  # 1 is its padding id
        elif kind == "decoder":
            out.append(torch.randint(0, V, (batch, max(1, seq // 2)), generator=g))
        elif kind == "mask":
            mask = torch.ones(batch, seq, dtype=torch.long)
            mask[-1, seq - 2 :] = 0  # padding at the end of the last sequence
            out.append(mask)
        elif kind == "image":
            size = _IMAGE_SIZE.get(name, 32)
            out.append(torch.randn(batch, 3, size, size, generator=g))
        elif kind == "audio":  # raw samples
            out.append(torch.randn(batch, AUDIO_SAMPLES, generator=g))
        else:  # whisper's log-mel features: (batch, mel bins, 2 * positions)
            out.append(torch.randn(batch, 16, 64, generator=g))
    return tuple(out)


def dynamic_shapes(name: str) -> tuple:
    """``dynamic_shapes`` for torch.export (the model takes ``*args``): batch everywhere,
    the sequence length of text inputs (ids and mask share it; a decoder has its own)."""
    from torch.export import Dim

    batch = Dim("batch", min=1, max=64)
    seq = Dim("seq", min=2, max=MAX_SEQ.get(name, 64))
    dec = Dim("dec", min=1, max=64)
    axes = {"text": {1: seq}, "mask": {1: seq}, "decoder": {1: dec}}
    return (tuple({0: batch, **axes.get(kind, {})} for kind in _INPUTS[name]),)


def dynamic_axes(name: str) -> dict[str, dict[int, str]]:
    """The same dims for the TorchScript ONNX exporter (by input name: ``args_0``, ...)."""
    names = {"text": "seq", "mask": "seq", "decoder": "dec"}
    return {
        f"args_{i}": {0: "batch", **({1: names[kind]} if kind in names else {})}
        for i, kind in enumerate(_INPUTS[name])
    }


def export_key(name: str, built: nn.Module, dynamic: bool = True) -> str:
    """What `export_onnx(name, ..., built=built)` makes depends on, as a hex digest: the
    model's name and exporter, its weights and buffers (names, dtypes, shapes, bytes), its
    inputs' dtypes and shapes, the dynamic dims, this file (the configs) and the versions of
    torch, transformers, onnx and onnxscript. Equal keys: the same export (a cache's key)."""
    import hashlib
    import importlib.metadata as md
    from pathlib import Path

    h = hashlib.sha256()
    versions = []
    for dist in ("torch", "transformers", "onnx", "onnxscript"):
        try:
            versions.append(md.version(dist))
        except md.PackageNotFoundError:
            versions.append(None)
    spec = (name, EXPORTER.get(name, "dynamo"), dynamic, versions, type(built).__name__)
    h.update(repr(spec).encode())
    h.update(Path(__file__).read_bytes())
    for key, t in built.state_dict().items():
        t = t.detach().contiguous().cpu()
        h.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    for a in inputs(name):
        h.update(f"{a.dtype}:{tuple(a.shape)}".encode())
    h.update(repr(dynamic_shapes(name) if dynamic else None).encode())
    return h.hexdigest()


def export_onnx(name: str, path, dynamic: bool = True, built: nn.Module | None = None) -> str:
    """``torch.onnx.export`` of the model (built here unless given) to ``path`` (the exporter
    :data:`EXPORTER` names); returns the exporter used."""
    m, args = built if built is not None else model(name), inputs(name)
    how = EXPORTER.get(name, "dynamo")
    if how == "dynamo":
        shapes = dynamic_shapes(name) if dynamic else None
        torch.onnx.export(m, args, str(path), dynamo=True, dynamic_shapes=shapes, verbose=False)
    else:
        names = [f"args_{i}" for i in range(len(args))]
        torch.onnx.export(
            m,
            args,
            str(path),
            dynamo=False,
            input_names=names,
            output_names=["out"],
            dynamic_axes=dynamic_axes(name) if dynamic else None,
        )
    return how
