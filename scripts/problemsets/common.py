"""Shared pieces of the problem-set generators: the train/validation split and file writing."""
import os
import sys

from shapes import read_problems

# Split by whole network. Validation networks never appear in a training file, and a validation
# problem whose full key (problem string) also occurs in a training file is dropped from validation.
# ResNet-101 and ConvNeXt-S are training networks: every one of their distinct shapes equals one of
# ResNet-50 / ConvNeXt-T (same blocks, more repeats), so as validation they would be empty.
# Mistral-7B repeats Llama-3 8B's projections (only its LM head differs), so it is training too.
CONV_TRAIN = ("resnet18", "resnet34", "resnet50", "resnet101", "resnext50", "mobilenet_v2", "convnext_t",
              "convnext_s", "efficientnet_b0", "unet", "r3d18")
CONV_VAL = ("efficientnet_b3", "inception_v3", "vgg16", "r2plus1d18")
# Training networks added after the first sweeps: their own split (conv_nets_train2.txt), so the files
# sampled from CONV_TRAIN stay as they were swept.
CONV_TRAIN2 = ("densenet121", "shufflenet_v2", "mobilenet_v3_large", "googlenet", "mc3_18")
# A second held-out set (conv_nets_val2.txt): six more networks, their keys disjoint from every file above.
CONV_VAL2 = ("wide_resnet50_2", "alexnet", "regnet_y_800mf", "efficientnet_v2_s", "deeplabv3_resnet50", "s3d")
GEMM_TRAIN = ("llama3_8b", "llama3_70b", "mistral_7b", "gpt2", "gpt2_xl", "bert_large")
GEMM_VAL = ("gptj_6b", "qwen2_7b", "phi3_mini")
# A second GEMM held-out set (gemm_llm_val2.txt): four more model families and sizes, keys disjoint from the above.
GEMM_VAL2 = ("falcon_7b", "stablelm_3b", "qwen2_1_5b", "opt_1_3b")
# Video training network (conv_nets_train3.txt): 3-D convs factored into time and space, as the held-out R(2+1)D-18
# and S3D have them.
CONV_TRAIN3 = ("slowfast_r50",)
SYNTH_PREFIXES = ("synth_conv", "synth_conv_sp", "synth_conv_dwb", "synth_conv_t", "synth_gemm")


def network_of(tag):
    return tag.split(".", 1)[0]


def excluded_keys(paths):
    keys = set()
    for p in paths or ():
        keys.update(prob for _, prob in read_problems(p))
    return keys


def command(script, argv):
    """The reproducing command for a header: --out left out, paths reduced to their file names."""
    kept = [v for i, v in enumerate(argv) if v != "--out" and (i == 0 or argv[i - 1] != "--out")]
    shown = [os.path.basename(a) if os.sep in a else a for a in kept]
    return " ".join([f"python3 scripts/problemsets/{script}"] + shown)


def emit(lines, out):
    text = "\n".join(lines) + "\n"
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def int_list(text):
    return [int(v) for v in text.split(",") if v]
