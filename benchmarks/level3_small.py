"""Reduced-size copies of KernelBench level 3 for a CPU survey of the compiler drafter (issue 33).

    python3 benchmarks/level3_small.py OUT_DIR [--src ../shared/kernelbench/level3] [--check]
        [--tiny]

Writes each of the 36 networks to OUT_DIR with only its module-level size constants changed
(batch size, image sizes, sequence lengths, some channel widths) and, where a network writes its
image size as a literal in `get_inputs` (MobileNetV2, EfficientNet B0/B2, MBConv), that
literal. Every class body, every layer and every layer kind is the published
one. Networks whose classifier or windowing fixes the image size (VGG19 and AlexNet: 224 for
their flattened Linear; the Swin models: 224 for their constructor's default img_size) keep it
and only get batch 1 (batch 2 elsewhere: training-mode batch norm needs more than one value per
channel). The single-block networks (6, 13, 14, 17, 21, 25) and RegNet also get narrower
channels, so the interpreter runs a forward of their Triton convolutions in seconds. `--check` builds each
reduced model and runs one eager forward, printing the output shape and the seconds.

`--tiny` writes only the 17 whole networks whose candidate forward took 150-240 s under the
Triton interpreter at SMALL's sizes, at TINY's still smaller ones (same rule: module-level
constants and get_inputs literals only): batch 1 where no training-mode batch norm sees a 1x1
map, the smallest image each accepts (8x8 for ResNet101, GoogLeNet, MobileNetV2, the
EfficientNets, ShuffleNet and RegNet: their strided layers pad a 1x1 map to 1x1; 24x24 for
SqueezeNet's unpadded ceil-mode pools; 32x32 stays the floor for the DenseNets, whose stride-2
average pools leave no pixel below it, with batch 2 for their last batch norm), 10 classes.
AlexNet, VGG19 and the Swin models keep 224 (see above), so their tiny copies are their small ones.
Results: benchmarks/results/level3_cpu_survey.md (with benchmarks/level3_cpu_survey.py).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

# file -> {module-level name: new value (source text)}; ("literal", old, new) rewrites get_inputs
SMALL: dict[str, dict[str, str]] = {
    "10_ResNet101.py": {"batch_size": "2", "height": "32", "width": "32", "num_classes": "10"},
    "12_VGG19.py": {"batch_size": "1", "num_classes": "10"},
    "13_DenseNet121TransitionLayer.py": {"batch_size": "2", "height, width": "8, 8"},
    "14_DenseNet121DenseBlock.py": {"batch_size": "2", "num_input_features": "8",
                                    "growth_rate": "8", "height, width": "8, 8"},
    "15_DenseNet121.py": {"batch_size": "2", "height, width": "32, 32"},
    "16_DenseNet201.py": {"batch_size": "2", "height, width": "32, 32"},
    "17_SqueezeNetFireModule.py": {"batch_size": "2", "expand1x1_channels": "16",
                                   "expand3x3_channels": "16", "height, width": "16, 16"},
    "18_SqueezeNet.py": {"batch_size": "2", "height": "64", "width": "64", "num_classes": "10"},
    "20_MobileNetV2.py": {"batch_size": "2", "num_classes": "10", "224, 224": "32, 32"},
    "21_EfficientNetMBConv.py": {"batch_size": "2", "in_channels": "16", "out_channels": "24",
                                 "224, 224": "16, 16"},
    "22_EfficientNetB0.py": {"batch_size": "2", "num_classes": "10", "224, 224": "32, 32"},
    "23_EfficientNetB1.py": {"batch_size": "2", "input_shape": "(3, 32, 32)", "num_classes": "10"},
    "24_EfficientNetB2.py": {"batch_size": "2", "num_classes": "10", "224, 224": "32, 32"},
    "25_ShuffleNetUnit.py": {"batch_size": "2", "input_channels": "48", "out_channels": "96",
                             "height": "8", "width": "8"},
    "26_ShuffleNet.py": {"batch_size": "2", "height": "32", "width": "32", "num_classes": "10"},
    "27_RegNet.py": {"batch_size": "2", "block_widths": "[16, 32, 64]",
                     "image_height, image_width": "32, 32"},
    "29_SwinMLP.py": {"batch_size": "1"},
    "30_SwinTransformerV2.py": {"batch_size": "1"},
    "32_ConvolutionalVisionTransformer.py": {"batch_size": "2", "num_classes": "10"},
    "33_VanillaRNN.py": {"batch_size": "8", "input_size": "256", "hidden_size": "256",
                         "output_size": "128", "sequence_length": "16"},
    "34_VanillaRNNHidden.py": {"batch_size": "2", "input_size": "64", "hidden_size": "32",
                               "output_size": "16", "sequence_length": "16"},
    "36_LSTMHn.py": {"batch_size": "2", "sequence_length": "16", "input_size": "16",
                     "hidden_size": "32"},
    "37_LSTMCn.py": {"batch_size": "2", "sequence_length": "16", "input_size": "16",
                     "hidden_size": "32"},
    "38_LSTMBidirectional.py": {"batch_size": "2", "sequence_length": "16", "input_size": "16",
                                "hidden_size": "32"},
    "3_DeepNarrowMLP.py": {"batch_size": "8", "input_size": "256",
                           "hidden_layer_sizes": "[64] * 16", "output_size": "256"},
    "40_GRUHidden.py": {"batch_size": "2", "seq_len": "16", "input_size": "16", "hidden_size": "32"},
    "41_GRUBidirectional.py": {"batch_size": "2", "seq_len": "16", "input_size": "16",
                               "hidden_size": "32"},
    "42_GRUBidirectionalHidden.py": {"batch_size": "2", "seq_len": "16", "input_size": "16",
                                     "hidden_size": "32"},
    "45_UNetSoftmax.py": {"batch_size": "2", "height": "16", "width": "32", "features": "8"},
    "46_NetVladWithGhostClusters.py": {"batch_size": "4", "num_features": "16",
                                       "num_clusters": "8", "feature_size": "32",
                                       "ghost_clusters": "4"},
    "47_NetVladNoGhostClusters.py": {"batch_size": "4", "num_features": "16", "num_clusters": "8",
                                     "feature_size": "32"},
    "49_Mamba2ReturnFinalState.py": {"batch_size": "2", "seq_length": "32", "n_heads": "2",
                                     "d_head": "8", "d_state": "4", "block_len": "8"},
    "50_ReLUSelfAttention.py": {"batch_size": "2", "max_seqlen": "32", "n_embd": "64",
                                "n_head": "4"},
    "5_AlexNet.py": {"batch_size": "1", "num_classes": "10"},
    "6_GoogleNetInceptionModule.py": {"batch_size": "2", "height": "8", "width": "8",
                                      "in_channels": "48", "out_1x1": "16", "reduce_3x3": "8",
                                      "out_3x3": "16", "reduce_5x5": "4", "out_5x5": "8",
                                      "pool_proj": "8"},
    "7_GoogleNetInceptionV1.py": {"batch_size": "2", "height": "32", "width": "32",
                                  "num_classes": "10"},
}

# the 17 networks session 20 left unverified (their candidate forward: 150-240 s at SMALL's sizes)
TINY: dict[str, dict[str, str]] = {
    "5_AlexNet.py": SMALL["5_AlexNet.py"],  # 224 fixed by fc1's 256 * 6 * 6
    "7_GoogleNetInceptionV1.py": {"batch_size": "1", "height": "8", "width": "8",
                                  "num_classes": "10"},  # no batch norm
    "10_ResNet101.py": {"batch_size": "2", "height": "8", "width": "8", "num_classes": "10"},
    "12_VGG19.py": SMALL["12_VGG19.py"],  # 224 fixed by the classifier's 512 * 7 * 7
    "15_DenseNet121.py": SMALL["15_DenseNet121.py"],  # 32x32 the floor, batch 2 for final_bn
    "16_DenseNet201.py": SMALL["16_DenseNet201.py"],
    "18_SqueezeNet.py": {"batch_size": "1", "height": "24", "width": "24", "num_classes": "10"},
    "20_MobileNetV2.py": {"batch_size": "2", "num_classes": "10", "224, 224": "8, 8"},
    "21_EfficientNetMBConv.py": {"batch_size": "2", "in_channels": "8", "out_channels": "8",
                                 "224, 224": "8, 8"},
    "22_EfficientNetB0.py": {"batch_size": "2", "num_classes": "10", "224, 224": "8, 8"},
    "23_EfficientNetB1.py": {"batch_size": "2", "input_shape": "(3, 8, 8)", "num_classes": "10"},
    "24_EfficientNetB2.py": {"batch_size": "2", "num_classes": "10", "224, 224": "8, 8"},
    "26_ShuffleNet.py": {"batch_size": "1", "height": "8", "width": "8", "num_classes": "10"},
    "27_RegNet.py": {"batch_size": "2", "block_widths": "[8, 16, 32]",
                     "image_height, image_width": "8, 8"},
    "29_SwinMLP.py": SMALL["29_SwinMLP.py"],  # 224: the constructor's img_size
    "30_SwinTransformerV2.py": SMALL["30_SwinTransformerV2.py"],
    "45_UNetSoftmax.py": {"batch_size": "1", "in_channels": "3", "out_channels": "2",
                          "height": "16", "width": "32", "features": "4"},
}


def reduce_source(name: str, text: str, table: dict[str, dict[str, str]] = SMALL) -> str:
    """`text` with the module-level assignments in table[name] changed (and image literals)."""
    for target, value in table[name].items():
        if re.fullmatch(r"\d+, \d+", target):  # an image size written in get_inputs
            head, sep, tail = text.partition("def get_inputs")
            if target not in tail:
                raise ValueError(f"{name}: no {target!r} in get_inputs")
            text = head + sep + tail.replace(target, value)
            continue
        pattern = re.compile(rf"^{re.escape(target)} *=[^\n#]*", re.M)
        if len(pattern.findall(text)) != 1:
            raise ValueError(f"{name}: not exactly one module-level {target!r}")
        text = pattern.sub(f"{target} = {value}", text)
    return text


def check(path: Path) -> str:
    import torch  # only for --check

    namespace: dict = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    start = time.perf_counter()
    with torch.no_grad():
        out = model(*namespace["get_inputs"]())
    shapes = [tuple(o.shape) for o in (out if isinstance(out, tuple) else (out,))]
    return f"{path.name}: out {shapes}, eager {time.perf_counter() - start:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--src", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared/kernelbench/level3")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="TINY's 17 networks at its sizes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    table = TINY if args.tiny else SMALL
    missing = sorted(set(table) - {p.name for p in args.src.glob("*.py")})
    if missing:
        raise SystemExit(f"not in {args.src}: {missing}")
    for name in sorted(table, key=lambda n: int(n.split("_")[0])):
        target = args.out / name
        target.write_text(reduce_source(name, (args.src / name).read_text(), table))
        print(check(target) if args.check else target.name, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
