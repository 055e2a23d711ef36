"""Hand-entered facts for tools/curate_profiles.py: models, source-table selections, seed figures, mappings and notes."""

from __future__ import annotations

SKUS = {"A100-40GB": "A100-SXM4-40GB", "A100-80GB": "A100-SXM4-80GB", "A30-24GB": "A30-24GB",
        "V100-16GB": "V100-16GB", "V100-32GB": "V100-32GB", "T4-16GB": "T4-16GB"}
ALLOWED_SKUS = set(SKUS.values()) | {"H100-SXM5-80GB", "H100-PCIe-80GB", "H200-141GB"}
DLE = "github.com/NVIDIA/DeepLearningExamples"

# ----------------------------------------------------------------------------- models
VISION_IO = "request = FP32 3x224x224 tensor (602112 B); response = 1000 FP32 logits (4000 B)"
SPEECH_IO = ("request = 7 s of 16 kHz 16-bit PCM (32000 B/s x 7 s); response = FP32 CTC logits, "
             "29 symbols x 350 frames (20 ms stride, Jasper/QuartzNet layout; order of magnitude for BPE models)")
BERT_IO = ("request at 384 tokens = 3 int32 tensors (ids, segment, mask) x 384 x 4 B; response = start/end "
           "FP32 logits 2 x 384 x 4 B; both scale linearly with tokens")
TV = "pytorch.org/vision/stable/models ({}_Weights num_params)"
#  name, domain, kind, unit, request B, response B, kernels, params M (None = unpublished),
#  weights MB if params unknown, largest activation tensor (elements) and what it is, preprocess, note, source
MODELS = [
    ("resnet50", "vision", "fixed", "", 602112, 4000, 95, 25.557032, None, 802816, "64x112x112 conv1 / 256x56x56",
     "image", VISION_IO + "; 95 kernels = TensorRT engine on A100 (SplitRPC)", TV.format("ResNet50") + "; SplitRPC seed Table 1"),
    ("resnet18", "vision", "fixed", "", 602112, 4000, 50, 11.689512, None, 802816, "64x112x112 conv1", "image",
     VISION_IO + "; 50 kernels = TensorRT (SplitRPC)", TV.format("ResNet18") + "; SplitRPC seed Table 1"),
    ("efficientnet-b0", "vision", "fixed", "", 602112, 4000, None, 5.288548, None, 1204224, "96x112x112 MBConv expansion",
     "image", VISION_IO, TV.format("EfficientNet_B0")),
    ("mobilenetv3-small", "vision", "fixed", "", 602112, 4000, None, 2.542856, None, 225792, "72x56x56 expansion",
     "image", VISION_IO + "; used by PREBA", TV.format("MobileNet_V3_Small")),
    ("squeezenet1.1", "vision", "fixed", "", 602112, 4000, None, 1.235496, None, 788544, "64x111x111 conv1",
     "image", VISION_IO + "; used by PREBA", TV.format("SqueezeNet1_1")),
    ("swin-t", "vision", "fixed", "", 602112, 4000, None, 28.288354, None, 1204224, "stage-1 MLP 3136x384",
     "image", VISION_IO + "; used by PREBA", TV.format("Swin_T")),
    ("shufflenet-v2", "vision", "fixed", "", 602112, 4000, None, 2.278604, None, 301056, "24x112x112 conv1",
     "image", VISION_IO + "; ShuffleNet v2 x1.0, used by PARIS", TV.format("ShuffleNet_V2_X1_0")),
    ("mobilenet-v1", "vision", "fixed", "", 602112, 4000, None, 4.231976, None, 802816, "64x112x112 block-1 pointwise",
     "image", VISION_IO + "; MobileNet v1 1.0-224, PARIS's 'MobileNet' (its ref [41], Howard et al. 2017); "
     "not in torchvision: params = keras.applications MobileNet trainable params (BN running stats excluded)",
     "Howard et al. 2017 MobileNets (arXiv:1704.04861) Table 8 (4.2M params, 569M Mult-Adds); "
     "keras.applications MobileNet (4231976 trainable params)"),
    ("alexnet", "vision", "fixed", "", 602112, 4000, None, 61.10084, None, 193600, "64x55x55 conv1", "image",
     VISION_IO + "; used by GPU-primitives seed", TV.format("AlexNet")),
    ("vgg19", "vision", "fixed", "", 602112, 4000, None, 143.66724, None, 3211264, "64x224x224 conv1_x", "image",
     VISION_IO + "; GPU-primitives Table II gives 549 MB FP32 weights", TV.format("VGG19")),
    ("resnext50", "vision", "fixed", "", 602112, 4000, None, 25.028904, None, 802816, "64x112x112 conv1 / 256x56x56",
     "image", VISION_IO + "; ResNeXt-50 32x4d, used by GPU-primitives seed", TV.format("ResNeXt50_32X4D")),
    ("lenet", "vision", "fixed", "", 784, 40, 12, 0.06, None, 4704, "6x28x28 conv1", "none",
     "SplitRPC LeNet on MNIST (TVM): 784 B request, 40 B response; params = LeNet-5 ~60k",
     "SplitRPC seed Table 1; LeCun et al. 1998 (LeNet-5 ~60k params)"),
    ("lstm", "nlp", "fixed", "", 8192, 1024, 32, None, 10.5, 8192, "8 steps x 4 gates x 256", "none",
     "SplitRPC synthetic LSTM (NNFusion), 8 KiB request / 1 KiB response; size unpublished: weights_mb is an "
     "estimate for 10 stacked layers of hidden 256 (1 KiB = 256 FP32 out, 8 KiB = 8x256 in)", "SplitRPC seed Table 1"),
    ("bert-splitrpc", "nlp", "fixed", "", 6152, 2056, 172, None, 220.0, 1769472, "12 heads x 384 x 384 scores",
     "none", "SplitRPC 'BERT' (TensorRT, SQuAD v2); variant not stated: weights/activation assume BERT-base at 384 "
     "tokens (6152 B ~ 4 x 384 int32 + 8 B); kept apart from bert-base", "SplitRPC seed Table 1"),
    ("bert-base", "nlp", "variable", "tokens", 4608, 3072, None, 110.0, None, 1769472, "12 heads x 384 x 384 scores",
     "none", BERT_IO, "Devlin et al. 2019 BERT paper Sec 3 (BERT-BASE 110M)"),
    ("bert-large", "nlp", "variable", "tokens", 4608, 3072, None, 340.0, None, 2359296, "16 heads x 384 x 384 scores",
     "none", BERT_IO, "Devlin et al. 2019 BERT paper Sec 3 (BERT-LARGE 340M)"),
    ("bert-dist6l", "nlp", "variable", "tokens", 4608, 3072, None, 67.0, None, 1769472, "12 heads x 384 x 384 scores",
     "none", BERT_IO + "; DLE bert-dist-6L-768D; params computed from 6 layers x 768 hidden (FFN 3072, vocab 30522)",
     f"{DLE} PyTorch/LanguageModeling/BERT README (distilled checkpoints)"),
    ("bert-dist4l", "nlp", "variable", "tokens", 4608, 3072, None, 13.0, None, 1769472, "12 heads x 384 x 384 scores",
     "none", BERT_IO + "; DLE bert-dist-4L-288D; params computed from 4 layers x 288 hidden (FFN 1152 assumed, "
     "vocab 30522)", f"{DLE} PyTorch/LanguageModeling/BERT README (distilled checkpoints)"),
    ("jasper", "speech", "variable", "s", 224000, 40600, None, 333.0, None, 358400, "1024 ch x 350 frames", "audio",
     SPEECH_IO + "; Jasper 10x5 DR as in DLE", "Li et al. 2019 Jasper paper (10x5: 333M params)"),
    ("quartznet", "speech", "variable", "s", 224000, 40600, None, 12.8, None, 358400, "1024 ch x 350 frames", "audio",
     SPEECH_IO + "; QuartzNet 10x5 as trained in DLE", "Kriman et al. 2020 QuartzNet paper (10x5: 12.8M params)"),
    ("conformer", "speech", "variable", "s", 224000, 40600, None, 30.7, None, 3584000,
     "256 ch x 350 x 40 conv-subsampling output", "audio",
     SPEECH_IO + "; PREBA's Conformer(default) size not stated: assumed Conformer (M) / NeMo default d_model 256",
     "Gulati et al. 2020 Conformer paper (Conformer M: 30.7M)"),
    ("citrinet", "speech", "variable", "s", 224000, 40600, None, 36.0, None, 358400, "512 ch x 700 frames", "audio",
     SPEECH_IO + "; PREBA does not state the size: assumed Citrinet-512", "NeMo model card stt_en_citrinet_512 (Params 36M)"),
]

# ----------------------------------------------------------------------------- latency
# (model, sku-key, precision, framework, DLE dir, section contains, selector, table label, note)
# selector: ("block", i, n, batch-1 throughput anchor) = i-th table of n rows inside the section;
#           ("raw", {col: value}) = rows whose raw columns match; ("all",) = every row.
TF1 = "TensorFlow/Classification/ConvNets/resnet50v1.5"
PTRT = "PaddlePaddle/Classification/RN50v1.5"
EFF = "PyTorch/Classification/ConvNets/efficientnet"
BT1, BT2 = "TensorFlow/LanguageModeling/BERT", "TensorFlow2/LanguageModeling/BERT"
TRI = "PyTorch/LanguageModeling/BERT/triton/"
JAS, QN = "PyTorch/SpeechRecognition/Jasper", "PyTorch/SpeechRecognition/QuartzNet"
N_EFF = "EfficientNet v1 B0, PyTorch AMP; p95/p99 below the mean at large batch as published"
N_TF1 = "TF1 NGC 20.06, no XLA; the source CSV has no precision for this table (taken from README table order)"
N_PTRT = "Paddle-TRT, synthetic input, no preprocessing; source CSV mislabels all three tables AMP (TF32/FP16/INT8)"
N_BT2 = "TF2 NGC 21.02, SQuAD v1.1 fine-tuned; table order Large FP16, Large FP32/TF32, Base FP16, Base FP32/TF32"
N_BT1 = "TF1 SQuAD v1.1; avg latency above p90 as published (throughput follows p50-like latency)"
N_TRI = ("Triton 21.10 offline scenario (concurrency 1, static batch, shared memory), Max Seq Length 384 per README; "
         "latency includes client/server overhead")
N_JAS = "PyTorch AMP (FP16 columns of the table); ~32 ms latency floor at small batch/length (fixed per-request overhead in the harness); throughput = batch/mean (derived)"
DLE_TABLES = [
    ("resnet50", "A100-40GB", "amp", "tensorflow1", TF1, "A100 40GB", ("block", 2, 9, 223.35), "Mixed Precision Inference Latency", N_TF1),
    ("resnet50", "V100-16GB", "amp", "tensorflow1", TF1, "V100 16G", ("block", 1, 9, 237.35), "Mixed Precision Inference Latency", N_TF1),
    ("resnet50", "V100-32GB", "amp", "tensorflow1", TF1, "DGX-2 (1x V100 32G)", ("block", 1, 9, 289.89), "Mixed Precision Inference Latency", N_TF1),
    ("resnet50", "T4-16GB", "amp", "tensorflow1", TF1, "T4", ("block", 1, 9, 211.04), "Mixed Precision Inference Latency", N_TF1),
    ("resnet50", "A100-80GB", "fp16", "paddle-tensorrt", PTRT, "Paddle-TRT performance: NVIDIA DGX A100", ("block", 1, 9, 1306.28), "FP16 Inference Latency", N_PTRT),
    ("resnet50", "A30-24GB", "fp16", "paddle-tensorrt", PTRT, "Paddle-TRT performance: NVIDIA A30", ("block", 1, 9, 1195.76), "FP16 Inference Latency", N_PTRT),
    ("efficientnet-b0", "A100-80GB", "amp", "pytorch", EFF, "A100 80GB) > Mixed Precision", ("raw", {"Model": "efficientnet-b0"}), "efficientnet-b0", N_EFF),
    ("efficientnet-b0", "V100-16GB", "amp", "pytorch", EFF, "V100 16GB) > Mixed Precision", ("raw", {"Model": "efficientnet-b0"}), "efficientnet-b0", N_EFF),
    ("efficientnet-b0", "V100-32GB", "fp16", "tensorflow2", "TensorFlow2/Classification/ConvNets/efficientnet_v1", "v1-B0 > Inference performance: NVIDIA DGX-1 (1x V100 32GB)",
     ("block", 0, 4, 97.53), "FP16 Inference Latency", "EfficientNet v1 B0, TF2 NGC 21.09, 224x224; only batches 1/8/32/512 published"),
]
for _sku, _sec, _base, _large in [("A100-80GB", "A100 80GB", 295.01, 145.21), ("V100-16GB", "V100 (1x V100 16GB)", 236.26, 105.04),
                                  ("V100-32GB", "V100 (1x V100 32GB)", 234.85, 101.58), ("T4-16GB", "T4 (1x T4 16GB)", 116.56, 57.6)]:
    _n = N_BT2 + ("; README prose for this table wrongly says DGX-2 V100" if _sku == "A100-80GB" else "")
    DLE_TABLES += [("bert-base", _sku, "fp16", "tensorflow2", BT2, _sec, ("block", 2, 8, _base), "BERT-Base FP16", _n),
                   ("bert-large", _sku, "fp16", "tensorflow2", BT2, _sec, ("block", 0, 8, _large), "BERT-Large FP16", _n)]
DLE_TABLES += [("bert-base", "A100-40GB", "fp16", "tensorflow1", BT1, "A100 40GB", ("raw", {"Model": "base", "Precision": "fp16"}), "base fp16", N_BT1),
               ("bert-large", "A100-40GB", "fp16", "tensorflow1", BT1, "A100 40GB", ("raw", {"Model": "large", "Precision": "fp16"}), "large fp16", N_BT1),
               ("bert-large", "A30-24GB", "fp16", "triton-tensorrt", TRI + "large", "A30, NVIDIA TensorRT", ("all",), "", N_TRI)]
for _m in ("dist6l", "dist4l"):
    for _sku, _sec in [("A30-24GB", "A30"), ("A100-80GB", "A100 80GB)"), ("V100-32GB", "V100 32GB)"), ("T4-16GB", "T4")]:
        DLE_TABLES.append((f"bert-{_m}", _sku, "fp16", "triton-tensorrt", TRI + _m, f"{_sec}, NVIDIA TensorRT", ("all",), "", N_TRI))
for _sku, _sec in [("A100-80GB", "DGX A100"), ("V100-16GB", "DGX-1 (1x V100 16GB)"), ("V100-32GB", "DGX-1 (1x V100 32GB)"), ("T4-16GB", "NVIDIA T4 ::")]:
    DLE_TABLES.append(("jasper", _sku, "fp16", "pytorch", JAS, _sec, ("all",), "FP16 columns", N_JAS + ("; DGX-2 V100-32GB table not used" if _sku == "V100-32GB" else "")))
for _sku, _sec in [("A100-80GB", "DGX A100"), ("V100-32GB", "DGX-2 (1x V100 32GB)")]:
    DLE_TABLES.append(("quartznet", _sku, "fp16", "pytorch", QN, _sec, ("all",), "FP16 columns", N_JAS))

POINT = dict(partition="full", kind="published", measured_on="", p50_ms=None, p90_ms=None, p95_ms=None, p99_ms=None, input_len=None)

SPLITRPC = [("lenet", 61, "tvm", "fp32"), ("lstm", 198, "nnfusion", "fp32"), ("resnet18", 588, "tensorrt", "fp16"),
            ("resnet50", 1248, "tensorrt", "fp16"), ("bert-splitrpc", 2042, "tensorrt", "fp16")]
GPU_PRIM = [("alexnet", 4.01, 3.67), ("resnet50", 10.53, 9.76), ("vgg19", 30.95, 30.49)]

# ----------------------------------------------------------------------------- preprocessing
SIZES = {"ImageNet-like JPEG mean 551x676": 551 * 676 / 1e6, "grace_hopper 517x606": 517 * 606 / 1e6,
         "720x1080, 70 KiB": 720 * 1080 / 1e6, "3200x1800, 1.6 MiB": 3200 * 1800 / 1e6, "4K JPEG": 3840 * 2160 / 1e6,
         "320p": 569 * 320 / 1e6, "480p": 854 * 480 / 1e6, "720p": 1280 * 720 / 1e6, "1080p": 1920 * 1080 / 1e6,
         "16 kHz audio, Whisper log-mel": 3600.0, "wav 10 s": 10.0, "mp3 60 s": 60.0}
P_NOTE = "'Np' read as 16:9 (569x320, 854x480, 1280x720, 1920x1080); PR gives height only"
P_SKIP = {"img2dataset (cv2.imdecode + resize)": "image size unknown and download overheads included",
          "DALI mixed decoder (nvJPEG) ImageNet reader+decoder only": "CPU utilisation, not a per-item cost",
          "MelT (GEMM NDFT) vs STFT+Mel": "relative speed-up only",
          "NVIDIA Jasper (incl. feature extraction) end-to-end inference": "end-to-end model latency (in latency_points)"}
P_EXTRA = [  # numbers quoted in the note column of the same source rows
    ("audio", "audio_decode", "cpu", "librosa (soxr)", "wav 10 s", 10.0, 0.78, "https://github.com/meta-pytorch/torchcodec/pull/1494 :: PR summary table"),
    ("audio", "audio_decode", "cpu", "torchcodec AudioDecoder", "mp3 10 s", 10.0, 3.99, "https://github.com/meta-pytorch/torchcodec/pull/1494 :: PR summary table"),
    ("audio", "audio_decode", "cpu", "librosa", "mp3 10 s", 10.0, 3.64, "https://github.com/meta-pytorch/torchcodec/pull/1494 :: PR summary table"),
    ("audio", "audio_decode", "cpu", "librosa", "mp3 60 s", 60.0, 21.81, "https://github.com/meta-pytorch/torchcodec/pull/1494 :: PR summary table"),
    ("image", "jpeg_decode", "gpu", "nvJPEG (torchvision decode_jpeg_cuda), not pinned", "grace_hopper 517x606", 517 * 606 / 1e6, 2.85,
     "https://github.com/pytorch/vision/pull/2786 :: comment by jamt9000 2020-10-17"),
    ("image", "jpeg_decode", "cpu", "Pillow, ARM Cortex-A57 @2.09GHz", "720x1080, 70 KiB", 0.7776, 11.688, "https://github.com/averne/oss-nvjpg :: README results table (Tegra X1)"),
    ("image", "jpeg_decode", "cpu", "Pillow, ARM Cortex-A57 @2.09GHz", "3200x1800, 1.6 MiB", 5.76, 114.918, "https://github.com/averne/oss-nvjpg :: README results table (Tegra X1)"),
    ("image", "jpeg_decode", "gpu", "Tegra X1 NVJPG hardware engine", "3200x1800, 1.6 MiB", 5.76, 15.997, "https://github.com/averne/oss-nvjpg :: README results table (Tegra X1)"),
]

# ----------------------------------------------------------------------------- RPC figures
RPC_SPLIT = {  # composite source values -> (item suffix, metric, value)
    "3253 / 4765": [("", "p50", 3253), ("", "p99", 4765)],
    "30000 vs 6000": [(" (local trtexec)", "throughput", 30000), (" (via Triton gRPC)", "throughput", 6000)],
    "0.74 / 1.80": [("", "avg", 0.74), ("", "p99", 1.80)],
    "0.97 / 3.92": [("", "avg", 0.97), ("", "p99", 3.92)],
    "12.15 / 12.89": [(" H2D", "bandwidth", 12.15), (" D2H", "bandwidth", 12.89)],
    "~749 of 900": [("", "bidirectional bandwidth (of 900 GB/s peak)", 749)],
}
S, PR, GP, EIF = "SplitRPC seed", "PREBA seed", "GPU-runtime-primitives seed", "EIF seed"
SEED_FIGS = [  # category, item, setting, metric, value, unit, source, note
    ("splitrpc", "gRPC RPC tax per request", "gRPC today (Sec 1 example)", "overhead", 980, "us", f"{S}, Sec 1", "'approx 980 us'"),
    ("splitrpc", "ResNet50 latency", "2017 vs today (Sec 1)", "latency 2017", 47, "ms", f"{S}, Sec 1", "RPC tax share 2.3% in 2017"),
    ("splitrpc", "ResNet50 latency", "today (Sec 1)", "latency", 2.5, "ms", f"{S}, Sec 1", "RPC tax share 39% with 980 us tax"),
    ("splitrpc", "gRPC processing incl. SerDes", "A100, gRPC, Fig 1", "max share of E2E", 9, "%", f"{S}, Sec 2", "'<9%', max for ResNet18"),
    ("splitrpc", "data movement (LeNet)", "A100, gRPC, Fig 1", "share of E2E", 73, "%", f"{S}, Sec 2", "'as much as 73%'"),
    ("splitrpc", "control header", "UDP+IP+Ethernet+service header", "size", 64, "B", f"{S}, Sec 3.1 / 5.1", ""),
    ("splitrpc", "GPU-managed orchestration O2 (LeNet, 12 kernels)", "A100, vs CPU-managed O1", "slowdown", 8.5, "x", f"{S}, Sec 3.2.1", "midpoint of '8-9x'"),
    ("splitrpc", "SmartNIC cost", "vs P2P NIC", "cost ratio", 4, "x", f"{S}, Sec 3.1.1", ""),
    ("splitrpc", "SplitRPC-pNIC E2E time", "vs gRPC-VMA, 5 services", "avg reduction", 52, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "SplitRPC-pNIC E2E time (LeNet)", "vs gRPC-VMA", "max reduction", 74, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "SplitRPC-sNIC E2E time", "vs gRPC-VMA", "avg reduction", 47, "%", f"{S}, Sec 6.2", "max 72% (LeNet)"),
    ("splitrpc", "data movement share (gRPC-VMA)", "avg over services", "share of E2E", 49, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "data movement share (SplitRPC-pNIC)", "avg over services", "share of E2E", 2, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "Lynx-sNIC E2E time (LeNet)", "vs gRPC-VMA", "slowdown", 2.1, "x", f"{S}, Sec 6.2", "'2.1x, 2.7x worse' for LeNet, LSTM"),
    ("splitrpc", "Lynx-sNIC E2E time (LSTM)", "vs gRPC-VMA", "slowdown", 2.7, "x", f"{S}, Sec 6.2", ""),
    ("splitrpc", "SplitRPC-pNIC vs local ideal", "avg over services", "gap", 14, "%", f"{S}, Sec 6.2", "ResNet18 35%, BERT 2%"),
    ("splitrpc", "SplitRPC-pNIC vs local ideal (ResNet18)", "large payload", "gap", 35, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "SplitRPC-pNIC vs local ideal (BERT)", "small payload", "gap", 2, "%", f"{S}, Sec 6.2", ""),
    ("splitrpc", "knee load (LeNet)", "SplitRPC vs gRPC-VMA", "max RPS gain", 2.6, "x", f"{S}, Sec 6.3", ""),
    ("splitrpc", "low-load latency saving (LeNet)", "vs gRPC-VMA", "mean", 90, "%", f"{S}, Sec 6.3", "P99 88%"),
    ("splitrpc", "low-load latency saving (LeNet)", "vs gRPC-VMA", "p99", 88, "%", f"{S}, Sec 6.3", ""),
    ("splitrpc", "low-load latency saving (BERT)", "vs gRPC-VMA", "mean", 22, "%", f"{S}, Sec 6.3", ""),
    ("splitrpc", "low-load latency saving (BERT)", "vs gRPC-VMA", "p99", 18, "%", f"{S}, Sec 6.3", ""),
    ("splitrpc", "peak throughput (ResNet18)", "32 clients, dyn. batching max 8", "gain vs gRPC-VMA", 2.4, "x", f"{S}, Sec 6.4", ""),
    ("splitrpc", "peak throughput (ResNet50)", "32 clients, dyn. batching max 8", "gain vs gRPC-VMA", 1.47, "x", f"{S}, Sec 6.4", "'47% higher'"),
    ("splitrpc", "tail latency saving (ResNet18, pNIC)", "1500 RPS", "p99", 54, "%", f"{S}, Sec 6.4", "sNIC 48%"),
    ("splitrpc", "tail latency saving (ResNet50, pNIC)", "1500 RPS", "p99", 49, "%", f"{S}, Sec 6.4", "sNIC 47%"),
    ("splitrpc", "SplitRPC-sNIC extra notification", "single-kernel microbenchmarks", "overhead", 10, "us", f"{S}, Sec 7.1", ""),
    ("splitrpc", "testbed network", "back-to-back 100GbE, MTU 9000", "link rate", 100, "Gb/s", f"{S}, Sec 6.1 / Table 2", "PCIe Gen3 switch PLX PEX 8796"),
    ("pcie", "DPU<->CPU traffic, image (MobileNet)", "A100 MIG server + U55C DPU", "max bandwidth used", 6.13, "GB/s", f"{PR}, Sec 4.2 (PCIe bandwidth)", "vs 32 GB/s PCIe Gen4"),
    ("pcie", "DPU<->CPU traffic, audio (CitriNet)", "A100 MIG server + U55C DPU", "max bandwidth used", 0.9, "GB/s", f"{PR}, Sec 4.2 (PCIe bandwidth)", ""),
    ("gpu_dma", "CPU cycles to move 8 images to GPU (CUDA-Copy)", "V100", "cycles", 2506216, "cycles", f"{GP}, Sec IV-B", ""),
    ("gpu_dma", "CPU cycles to move 8 images to GPU (GPU-DMA)", "V100", "cycles", 86263, "cycles", f"{GP}, Sec IV-B", ""),
    ("completion_notification", "AlexNet TensorRT batch 1, Sync-lite", "1 model per GPU, 4 GPUs", "latency", 3.2, "ms", f"{GP}, Sec IV-A", "p99 per text"),
    ("completion_notification", "AlexNet TensorRT batch 1, callback", "1 model per GPU, 4 GPUs", "latency", 3.8, "ms", f"{GP}, Sec IV-A", "callback adds ~600 us GPU idle"),
    ("completion_notification", "AlexNet TensorRT batch 1, synchronize", "1 model per GPU, 4 GPUs", "latency", 4.17, "ms", f"{GP}, Sec IV-A", ""),
    ("cold_start", "CPU INaaS cold start", "model + library loading", "share of response time", 73, "%", f"{EIF}, Sec I", "cited from its ref [1]"),
    ("cold_start", "GPU INaaS cold start", "model + library loading", "share of response time", 91, "%", f"{EIF}, Sec I", "cited from its ref [1]"),
]

# ----------------------------------------------------------------------------- prices, power
KINDS = {"TDP": "tdp_w", "power cap": "tdp_w", "power envelope": "tdp_w", "sale price estimate": "price_usd",
         "list base price": "price_usd", "quote": "price_usd", "street price": "price_usd",
         "cloud on-demand": "usd_per_gpu_hour", "cloud price spread across providers": "usd_per_gpu_hour"}
PRICE_EXTRA = [  # PREBA cost-model defaults, appended after the prices_power.csv rows
    dict(item="electricity (PREBA TCO default)", kind="usd_per_kwh", value=0.139, unit="USD/kWh", context="PREBA cost model",
         reliability="paper assumption", note="OPEX = power x time x price", source="PREBA seed, Sec 6.3 (ref [26])"),
    dict(item="hardware lifetime (PREBA TCO default)", kind="lifetime_years", value=3, unit="years", context="PREBA cost model",
         reliability="paper assumption", note="'time' in Throughput x time cost-efficiency; CAPEX = server + GPU + FPGA",
         source="PREBA seed, Sec 6.3"),
]

# ----------------------------------------------------------------------------- load points (Triton online sweeps)
# triton_latency_breakdown.csv model dir -> (project model, framework, note). nnUNet and FastPitch are not in
# models.csv and are dropped; so are A40 rows (not a catalogue GPU).
_N_ONLINE = ("Triton online scenario: perf_analyzer concurrency sweep, client batch 1 (-b 1 in the DLE online test "
             "script), dynamic batching (max batch 128, preferred 64/128), so the server batch grows with load; "
             "{inst} model instance(s); the source CSV keeps only p99 and avg of the published percentiles")
TRITON_LOAD = {
    "PyTorch/Classification/ConvNets/triton/resnet50": ("resnet50", "triton-onnxruntime-tensorrt", _N_ONLINE.format(inst=1)),
    "TensorFlow/Classification/ConvNets/triton": ("resnet50", "triton-tf-trt", _N_ONLINE.format(inst=2)),
}
TRITON_LOAD_BATCH = 1  # client batch size of the DLE online scenario
