"""What the steps of an ONNX Runtime trace do, one line each: ONNX Runtime's graph
transformers (as its verbose log names them), onnxscript's optimizer passes and rewrite
rules (a rule without a name as the variable onnxscript binds it to, `mul_by_1_rule`), and
the transformers optimizer's fusions (its `fuse_*` methods). Read by the rewrites view
through `Adapter.rule_doc`; a name not here (a user's rule, a newer transformer) has no
words."""

from __future__ import annotations

ORT = {
    # basic (level 1): semantics-preserving rewrites of standard ONNX ops, any provider
    "ConstantFolding": "evaluates nodes whose inputs are all constant and puts the results "
    "in as initializers",
    "ConstantSharing": "makes scalar initializers of equal dtype and value one initializer "
    "shared by their users",
    "CommonSubexpressionElimination": "merges nodes that compute the same op on the same "
    "inputs into one",
    "MatMulAddFusion": "fuses MatMul then Add of a bias into Gemm (reshaping inputs of rank "
    "above 2 around it)",
    "ReshapeFusion": "replaces a Shape/Gather/Concat chain that builds a Reshape's target "
    "shape with a constant shape",
    "FreeDimensionOverrideTransformer": "fixes free (symbolic) input dimensions to the values "
    "the session options give",
    "SliceConcatToSpaceToDepthFusion": "fuses the Slice/Concat pattern of a space-to-depth "
    "into SpaceToDepth",
    "GeluFusionL1": "fuses the erf form of Gelu (Div, Erf, Add, Mul, Mul) into one Gelu node "
    "(opset 20)",
    "LayerNormFusionL1": "fuses ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add into one "
    "LayerNormalization (opset 17)",
    "QDQPropagationTransformer": "moves QuantizeLinear/DequantizeLinear pairs across "
    "data-movement ops",
    "EnsureUniqueDQForNodeUnit": "duplicates a DequantizeLinear read by several nodes so each "
    "QDQ node unit has its own",
    "DoubleQDQPairsRemover": "removes a redundant second QuantizeLinear/DequantizeLinear pair",
    "WeightBiasQuantization": "quantizes the float bias of a QDQ Conv/Gemm from its weight "
    "and input scales",
    "WhereDummyDq": "adds a DequantizeLinear to a Where's constant input so it forms a QDQ "
    "node unit",
    "TransposeOptimizer": "pushes Transposes through other ops and cancels inverse pairs",
    "RemoveDuplicateCastTransformer": "removes Casts that undo each other or repeat",
    "CastFloat16Transformer": "inserts Casts from float16 to float32 around nodes the CPU "
    "runs in float32 only",
    "MemcpyTransformer": "inserts MemcpyToHost/FromHost where values cross execution providers",
    "Level1_RuleBasedTransformer": "ORT's level-1 rewrite rules (Identity, Slice, Dropout and "
    "no-op elimination, Conv with BatchNorm/Add/Mul fusions, ...)",
    # extended (level 2): fusions into contrib ops (com.microsoft), CPU and CUDA
    "Level2_RuleBasedTransformer": "ORT's level-2 rewrite rules, applied node by node",
    "TransposeOptimizer_CPUExecutionProvider": "the transpose optimizer again, for the CPU "
    "provider's layout",
    "GemmActivationFusion": "fuses Gemm and the activation after it into FusedGemm",
    "MatMulIntegerToFloatFusion": "fuses MatMulInteger, Cast and Mul into MatMulIntegerToFloat",
    "DynamicQuantizeMatMulFusion": "fuses DynamicQuantizeLinear and MatMulInteger into "
    "DynamicQuantizeMatMul",
    "ConvActivationFusion": "fuses Conv and the activation after it (Relu, Sigmoid, Clip, "
    "...) into FusedConv",
    "GeluFusionL2": "fuses the erf form of Gelu into com.microsoft::Gelu",
    "LayerNormFusionL2": "fuses the ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add pattern into "
    "LayerNormalization",
    "SimplifiedLayerNormFusion": "fuses an RMS norm (Pow/ReduceMean/Add/Sqrt/Div/Mul) into "
    "SimplifiedLayerNormalization",
    "AttentionFusion": "fuses the self-attention subgraph (QKV MatMuls, Softmax, mask) into "
    "com.microsoft::Attention",
    "EmbedLayerNormFusion": "fuses word/position/segment Gathers, their Adds and the "
    "LayerNorm into EmbedLayerNormalization",
    "GatherSliceToSplitFusion": "fuses Gathers and Slices that cut one tensor into Split",
    "GatherToSliceFusion": "replaces a Gather of a contiguous index range with Slice",
    "MatmulTransposeFusion": "folds a Transpose of a MatMul input into FusedMatMul's transA/transB",
    "BiasGeluFusion": "fuses Add of a bias then Gelu into BiasGelu",
    "GroupQueryAttentionFusion": "fuses a grouped-query attention subgraph into "
    "GroupQueryAttention",
    "SkipLayerNormFusion": "fuses Add (the residual) then LayerNormalization into "
    "com.microsoft::SkipLayerNormalization",
    "BiasSkipLayerNormFusion": "folds the bias Add before a SkipLayerNormalization into it",
    "FastGeluFusion": "fuses the tanh approximation of Gelu into FastGelu",
    "QuickGeluFusion": "fuses x * Sigmoid(alpha * x) into QuickGelu",
    "SwiGluFusion": "fuses the SiLU-gated linear unit into one op",
    "BiasSoftmaxFusion": "fuses Add of a bias (or mask) then Softmax into BiasSoftmax",
    "BiasDropoutFusion": "fuses Add of a bias, Dropout and the residual Add into BiasDropout",
    "MatMulScaleFusion": "folds a multiplication or division by a constant into "
    "FusedMatMul's alpha",
    "MatMulActivationFusion": "fuses MatMul and the activation after it",
    "MatMulNBitsFusion": "fuses the dequantize of n-bit weights and MatMul into MatMulNBits",
    "QDQS8ToU8Transformer": "turns int8 QDQ pairs into uint8 ones (what the CPU's kernels prefer)",
    "QDQSelectorActionTransformer": "replaces QDQ node units with quantized ops (QLinearConv, "
    "QLinearMatMul, ...)",
    "QDQFinalCleanupTransformer": "removes QuantizeLinear/DequantizeLinear pairs left with "
    "nothing between them",
    # all (level 3): layout optimizations
    "NchwcTransformer": "rewrites Convs and pools to ORT's blocked NCHWc layout "
    "(com.microsoft.nchwc ops, reordered weights, Reorder nodes at the edges)",
    "NhwcTransformer": "rewrites quantized Convs to the NHWC layout",
    "ConvAddActivationFusion": "fuses Conv, the Add of a residual and the activation into "
    "FusedConv",
    "FuseFp16InitializerToFp32NodeTransformer": "replaces a float16 initializer cast to "
    "float32 for a node by a float32 copy",
}

ONNXSCRIPT = {
    # onnx_ir / onnxscript passes
    "InlinePass": "inlines every call of a model-local function",
    "FoldConstantsPass": "evaluates nodes whose inputs are constant (shapes included) and "
    "puts the results in as constants",
    "RemoveUnusedNodesPass": "removes nodes and initializers no output depends on",
    "RemoveUnusedFunctionsPass": "removes model-local functions nothing calls",
    "RemoveUnusedOpsetsPass": "removes opset imports no node uses",
    "LiftConstantsToInitializersPass": "turns Constant nodes into initializers",
    "LiftSubgraphInitializersToMainGraphPass": "moves initializers of subgraphs to the main graph",
    "DeduplicateInitializersPass": "makes initializers of equal content one initializer",
    "DeduplicateHashedInitializersPass": "makes initializers of equal content (by hash) one "
    "initializer",
    "CommonSubexpressionEliminationPass": "merges nodes that compute the same op on the same "
    "inputs",
    "IdentityEliminationPass": "removes Identity nodes, their users reading the input",
    "OutputFixPass": "makes each graph output its own value (an Identity where an input or "
    "another output was one)",
    "NameFixPass": "gives every value and node a unique name",
    "TopologicalSortPass": "orders the nodes so each comes after what it reads",
    "ShapeInferencePass": "writes onnx's inferred types and shapes into the model",
    # onnxscript's default rewrite rules (onnxscript/rewriter/rules/common)
    "mul_by_1_rule": "Mul(x, 1) -> x",
    "add_0_rule": "Add(x, 0) -> x",
    "sub_0_rule": "Sub(x, 0) -> x",
    "div_by_1_rule": "Div(x, 1) -> x",
    "dropout_zero_rule": "Dropout(x, ratio=0) -> x",
    "dropout_inference_rule": "Dropout(x, training_mode=False) -> x",
    "two_reshapes_matmul_reshape_rule": "Reshape, Reshape, MatMul, Reshape -> MatMul where "
    "MatMul's broadcasting does the same",
    "one_reshape_matmul_reshape_rule": "Reshape, MatMul, Reshape -> MatMul where MatMul's "
    "broadcasting does the same",
    "cast_constant_of_shape_rule": "Cast(ConstantOfShape(s, v)) -> ConstantOfShape of v in "
    "the target type",
    "cast_constant_of_shape_without_value_rule": "Cast(ConstantOfShape(s)) -> ConstantOfShape "
    "of zero in the target type",
    "collapse_slice_rule": "removes a Slice that keeps the whole tensor",
    "collapse_slice2_rule": "replaces a Slice that keeps the whole tensor by Identity",
    "MaterializeReshapeShape": "replaces a Reshape's computed target shape by a constant "
    "where the shapes are known",
    "FuseSuccessiveMin": "Min(Min(x, a), b) -> Min(x, min(a, b))",
    "FuseSuccessiveMax": "Max(Max(x, a), b) -> Max(x, max(a, b))",
    "FuseMinMaxToClip": "Min then Max with constants -> Clip",
    "FuseMaxMinToClip": "Max then Min with constants -> Clip",
    "FuseSuccessiveClipRelu": "Clip then Relu -> one Clip",
    "FuseSuccessiveReluClip": "Relu then Clip -> one Clip",
    "FuseSuccessiveRelu": "Relu(Relu(x)) -> Relu(x)",
    "FuseSuccessiveClip": "Clip then Clip -> one Clip of the tighter bounds",
    "CastCast": "Cast then Cast -> one Cast where the first loses nothing",
    "CastIdentity": "removes a Cast to the type its input already has",
    "ExpandIdentity": "removes an Expand to the shape its input already has",
    "Flatten2Reshape": "Flatten -> Reshape",
    "ReshapeReshape": "Reshape then Reshape -> one Reshape",
    "SlicesSplit": "Slices that cut a tensor in consecutive parts -> Split",
    "TransposeIdentity": "removes a Transpose of the identity permutation",
    "TransposeTranspose": "Transpose then Transpose -> one Transpose (or none)",
    "UnsqueezeUnsqueeze": "Unsqueeze then Unsqueeze -> one Unsqueeze",
    "SqueezeReshape1d": "Squeeze then Reshape of a 1-D tensor -> one Reshape",
    "ScatterAllDynamic": "a ScatterND that overwrites the whole tensor -> its updates",
    "ScatterAllStatic": "a ScatterND that overwrites the whole tensor (static shape) -> its "
    "updates",
    "NormalizePadFormatConv": "writes a Conv's auto_pad as explicit pads",
    "NormalizePadFormatConvInteger": "writes a ConvInteger's auto_pad as explicit pads",
    "FuseConvPad": "Pad then Conv -> Conv with the padding in its pads",
    "FuseConvIntegerPad": "Pad then ConvInteger -> ConvInteger with the padding in its pads",
    "FuseBatchNormIntoConv": "folds an inference BatchNormalization into the Conv before it "
    "(weights and bias rescaled)",
    "FuseBatchNormIntoConvTranspose": "folds an inference BatchNormalization into the "
    "ConvTranspose before it",
    "FuseBatchNormIntoGemm": "folds an inference BatchNormalization into the Gemm before it",
    "RemoveOptionalBiasFromConv": "drops a Conv's bias input that is all zeros",
    "RemoveOptionalBiasFromConvTranspose": "drops a ConvTranspose's bias input that is all zeros",
    "RemoveOptionalBiasFromQLinearConv": "drops a QLinearConv's bias input that is all zeros",
    "RemoveOptionalBiasFromGemm": "drops a Gemm's C input that is all zeros",
}

TRANSFORMERS = {
    "fuse_constant_fold": "folds the constant parts of the graph (ORT's constant folding)",
    "fuse_shape": "replaces Shape subgraphs whose result is known by constants",
    "fuse_reshape": "replaces a Reshape's computed shape (Shape/Gather/Concat) by a constant",
    "fuse_layer_norm": "fuses the ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add pattern into "
    "LayerNormalization",
    "fuse_simplified_layer_norm": "fuses an RMS norm into SimplifiedLayerNormalization",
    "fuse_gelu": "fuses the erf form of Gelu into com.microsoft::Gelu",
    "fuse_bias_gelu": "fuses Add of a bias then Gelu into BiasGelu (or FastGelu with a bias)",
    "fuse_gemm_fast_gelu": "fuses MatMul and FastGelu into GemmFastGelu",
    "fuse_add_bias_skip_layer_norm": "folds the bias Add before a SkipLayerNormalization into it",
    "fuse_skip_layer_norm": "fuses Add (the residual) then LayerNormalization into "
    "SkipLayerNormalization",
    "fuse_skip_simplified_layer_norm": "fuses Add then an RMS norm into "
    "SkipSimplifiedLayerNormalization",
    "fuse_attention": "fuses each self-attention subgraph into com.microsoft::Attention",
    "fuse_multi_head_attention": "fuses attention subgraphs into MultiHeadAttention",
    "fuse_rotary_embeddings": "fuses rotary position embedding subgraphs into RotaryEmbedding",
    "fuse_embed_layer": "fuses the embeddings' Gathers, Adds and LayerNorm into "
    "EmbedLayerNormalization",
    "fuse_embedding": "fuses the embeddings' Gathers and Adds",
    "fuse_mask": "turns the attention mask computation into the form Attention reads",
    "fuse_bias_add": "fuses Add of a bias into BiasAdd",
    "fuse_qordered_mamtul": "fuses quantized, ordered MatMuls into QOrderedMatMul",
}

RULES = {**ORT, **ONNXSCRIPT, **TRANSFORMERS}


def rule_doc(rule: str) -> str:
    """What `rule` (a step's transformer, pass, fusion or rule name) does, in one line; ""
    for a name not listed."""
    return RULES.get(rule, "") if isinstance(rule, str) else ""


__all__ = ["ONNXSCRIPT", "ORT", "RULES", "TRANSFORMERS", "rule_doc"]
