"""Hugging Face transformers models through the torch.export path (issue #13): each built from
a small random config in code (no download), explored with the default pipeline and checked
against eager: no finding (no divergence, no shape mismatch, no failed pass).

Not yet here (issue #13 goes on): the ONNX path of the same models, dynamic batch and
sequence dims, and the compiled build (legalize-ops, codegen) of each."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import explorer

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

V = 100  # vocabulary


class ByName(nn.Module):
    """Calls a transformers model with keyword inputs and returns one output tensor."""

    def __init__(self, model: nn.Module, names: list[str], out: str):
        super().__init__()
        self.model, self.names, self.out = model, names, out

    def forward(self, *args):
        return getattr(self.model(**dict(zip(self.names, args, strict=True))), self.out)


def _ids(length: int = 8) -> torch.Tensor:
    return torch.randint(0, V, (2, length), generator=torch.Generator().manual_seed(length))


def _image(size: int = 32) -> torch.Tensor:
    return torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(size))


def _mask() -> torch.Tensor:
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 6:] = 0  # padding in the second sequence
    return mask


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


def _build(name: str):
    """The model (wrapped to take positional inputs) and its example inputs."""
    T = transformers
    text = ["input_ids"]
    image = ["pixel_values"]
    if name == "gpt2":
        cfg = T.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=V, use_cache=False)
        return ByName(T.GPT2LMHeadModel(cfg), text, "logits"), (_ids(),)
    if name == "bert":
        model = T.BertModel(T.BertConfig(**_ENCODER))
        return ByName(model, [*text, "attention_mask"], "last_hidden_state"), (_ids(), _mask())
    if name == "distilbert":
        cfg = T.DistilBertConfig(
            n_layers=2, dim=64, n_heads=4, hidden_dim=128, vocab_size=V, max_position_embeddings=64
        )
        model = T.DistilBertModel(cfg)
        return ByName(model, [*text, "attention_mask"], "last_hidden_state"), (_ids(), _mask())
    if name == "roberta":
        model = T.RobertaModel(T.RobertaConfig(**_ENCODER, pad_token_id=1))
        args = (_ids().clamp(min=2), _mask())
        return ByName(model, [*text, "attention_mask"], "last_hidden_state"), args
    if name == "t5-encoder":
        return ByName(T.T5EncoderModel(T.T5Config(**_T5)), text, "last_hidden_state"), (_ids(),)
    if name == "t5":
        model = T.T5ForConditionalGeneration(T.T5Config(**_T5))
        return ByName(model, [*text, "decoder_input_ids"], "logits"), (_ids(), _ids(4))
    if name == "llama":
        return ByName(T.LlamaForCausalLM(T.LlamaConfig(**_DECODER)), text, "logits"), (_ids(),)
    if name == "mistral":
        cfg = T.MistralConfig(**_DECODER, sliding_window=None)
        return ByName(T.MistralForCausalLM(cfg), text, "logits"), (_ids(),)
    if name == "qwen2":
        return ByName(T.Qwen2ForCausalLM(T.Qwen2Config(**_DECODER)), text, "logits"), (_ids(),)
    if name == "phi":
        return ByName(T.PhiForCausalLM(T.PhiConfig(**_DECODER)), text, "logits"), (_ids(),)
    if name == "vit":
        cfg = T.ViTConfig(**_ENCODER, image_size=32, patch_size=8)
        return ByName(T.ViTModel(cfg), image, "last_hidden_state"), (_image(),)
    if name == "swin":
        cfg = T.SwinConfig(
            image_size=32,
            patch_size=4,
            embed_dim=32,
            depths=[1, 1],
            num_heads=[2, 4],
            window_size=4,
        )
        return ByName(T.SwinModel(cfg), image, "last_hidden_state"), (_image(),)
    if name == "mobilevit":
        cfg = T.MobileViTConfig(
            image_size=64,
            patch_size=2,
            hidden_sizes=[32, 48, 64],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
            num_attention_heads=4,
        )
        return ByName(T.MobileViTModel(cfg), image, "last_hidden_state"), (_image(64),)
    if name == "convnext":
        cfg = T.ConvNextConfig(num_stages=2, hidden_sizes=[32, 64], depths=[1, 1], image_size=32)
        return ByName(T.ConvNextModel(cfg), image, "last_hidden_state"), (_image(),)
    if name == "resnet":
        cfg = T.ResNetConfig(embedding_size=32, hidden_sizes=[32, 64], depths=[1, 1])
        return ByName(T.ResNetModel(cfg), image, "last_hidden_state"), (_image(),)
    if name == "whisper-encoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        cfg = T.WhisperConfig(
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
        features = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
        return ByName(WhisperEncoder(cfg), ["input_features"], "last_hidden_state"), (features,)
    if name == "clip-vision":
        cfg = T.CLIPVisionConfig(**_ENCODER, image_size=32, patch_size=8)
        return ByName(T.CLIPVisionModel(cfg), image, "last_hidden_state"), (_image(),)
    if name == "clip-text":
        cfg = T.CLIPTextConfig(**dict(_ENCODER, max_position_embeddings=16))
        return ByName(T.CLIPTextModel(cfg), text, "last_hidden_state"), (_ids(),)
    raise KeyError(name)


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
]


@pytest.mark.parametrize("name", ZOO)
def test_a_transformers_model_converts_and_checks_clean(name):
    torch.manual_seed(0)
    model, args = _build(name)
    model = model.eval()
    trace = explorer.explore(model, args)
    assert trace.failure is None
    report = trace.check(args, progress=False)
    assert report.numbers_checked
    assert [str(f) for f in report.findings if f.is_failure] == []
    with torch.no_grad():
        expected = model(*args).numpy()
    from compiler.interpret import run

    (got,) = run(trace.final.module, *[a.numpy() for a in args])
    assert got.shape == expected.shape
    assert abs(got - expected).max() <= 1e-4 * max(1.0, abs(expected).max())
