"""Image and audio preprocessing pipelines of inference serving, as pure functions.

Image (ResNet-style serving input): JPEG decode -> resize so the short side is 256 px
(bilinear, antialiased, as torchvision's Resize) -> centre crop 224x224 -> float32 CHW,
normalised with the ImageNet mean and std. Test inputs are real photographs shipped offline
in scikit-image's wheel (no network fetch), re-encoded as JPEG at the sizes asked for.

Audio (ASR front end, Jasper/QuartzNet style): resample to 16 kHz (polyphase) -> STFT (25 ms
Hann window, 10 ms hop, n_fft 512, centred) -> power -> 80 mel bands -> log -> per-band
normalisation over time. `synth_speech` makes a speech-like test signal: no package here ships
a recording offline, and the cost of these steps depends on the length, not the content.
"""

from __future__ import annotations

import io
import math
import sys
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np

from engine.profilers import ProfilerError

if TYPE_CHECKING:
    from PIL import Image

#: photos in scikit-image's data folder that are in the wheel (no network fetch)
PHOTOS = ("astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "motorcycle_left.png")
AUDIO_RATE = 44_100
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)  # ImageNet, RGB
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
_MEAN255 = (MEAN * 255.0)[:, None, None]  # normalise uint8 planes in place: (x - 255 mean) / (255 std)
_INV_STD255 = (1.0 / (255.0 * STD))[:, None, None]


# --------------------------------------------------------------------------- image pipeline

def photo_folder() -> Path:
    """scikit-image's data folder, found without importing scikit-image."""
    spec = find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise ProfilerError("the image profiler needs scikit-image's sample photos: "
                            "pip install scikit-image==0.26.0")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def load_photos(folder: Optional[Path] = None) -> list[tuple[str, "Image.Image"]]:
    """The photos of PHOTOS found in `folder` (default: scikit-image's) as RGB Pillow images.

    A missing photo is skipped with a message on stderr; ProfilerError if none loads.
    """
    from PIL import Image

    folder = photo_folder() if folder is None else Path(folder)
    photos = []
    for name in PHOTOS:
        try:
            with Image.open(folder / name) as im:
                photos.append((name.rsplit(".", 1)[0], im.convert("RGB")))
        except OSError:
            print(f"profile preprocess: photo {name} not in {folder}; skipped", file=sys.stderr)
    if not photos:
        raise ProfilerError(f"none of the sample photos {', '.join(PHOTOS)} are in {folder}; "
                            "reinstall scikit-image (pip install scikit-image==0.26.0)")
    return photos


def encode_jpeg(photo, size: tuple[int, int], quality: int = 90) -> bytes:
    """`photo` scaled and centre-cropped to exactly `size` (w, h), encoded as a baseline JPEG."""
    from PIL import Image, ImageOps

    buf = io.BytesIO()
    ImageOps.fit(photo, size, Image.Resampling.LANCZOS).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def decode_jpeg(data: bytes):
    """Decode JPEG bytes to an RGB Pillow image (full-size decode, no DCT-domain downscaling)."""
    from PIL import Image

    im = Image.open(io.BytesIO(data))
    im.load()
    return im if im.mode == "RGB" else im.convert("RGB")


def transform_image(im, short: int = 256, crop: int = 224) -> np.ndarray:
    """Resize (short side `short`, bilinear, antialiased), centre crop, normalise: float32 (3, crop, crop)."""
    from PIL import Image

    w, h = im.size
    scale = short / min(w, h)
    nw, nh = max(short, round(w * scale)), max(short, round(h * scale))
    im = im.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = int(round((nw - crop) / 2.0)), int(round((nh - crop) / 2.0))
    im = im.crop((left, top, left + crop, top + crop))
    x = np.ascontiguousarray(np.asarray(im).transpose(2, 0, 1), dtype=np.float32)  # CHW, 0..255
    x -= _MEAN255
    x *= _INV_STD255
    return x


def preprocess_image(data: bytes) -> np.ndarray:
    """The whole image pipeline on JPEG bytes: float32 (3, 224, 224), ImageNet-normalised."""
    return transform_image(decode_jpeg(data))


# --------------------------------------------------------------------------- audio pipeline

def synth_speech(seconds: float, rate: int = AUDIO_RATE, seed: int = 0) -> np.ndarray:
    """A deterministic speech-like float32 signal in [-1, 1]: harmonics of a gliding 100-250 Hz pitch,
    a 4 Hz syllable envelope and background noise (cost does not depend on content)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    f0 = 175 + 75 * np.sin(2 * np.pi * 0.3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(np.sin(k * phase) / k for k in range(1, 16))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2
    x = 0.3 * envelope * voice + 0.02 * rng.standard_normal(t.size)
    return (x / np.max(np.abs(x))).astype(np.float32)


def _hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)


def _mel_to_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m) / 2595.0) - 1.0)


@lru_cache(maxsize=8)
def mel_filterbank(rate: int = 16_000, n_fft: int = 512, n_mels: int = 80, fmin: float = 0.0,
                   fmax: Optional[float] = None) -> np.ndarray:
    """Triangular mel filters (HTK mel scale, Slaney area normalisation): float32 (n_mels, n_fft//2+1)."""
    fmax = rate / 2 if fmax is None else fmax
    bins = np.linspace(0.0, rate / 2, n_fft // 2 + 1)
    hz = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    lo, mid, hi = hz[:-2, None], hz[1:-1, None], hz[2:, None]
    w = np.maximum(0.0, np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)))
    return (w * (2.0 / (hi - lo))).astype(np.float32)


@lru_cache(maxsize=4)
def _window(n_fft: int, win: int) -> np.ndarray:
    """Periodic Hann window of `win` samples, zero-padded to n_fft in the centre (as torch.stft)."""
    w = np.zeros(n_fft, dtype=np.float32)
    off = (n_fft - win) // 2
    w[off:off + win] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win) / win)
    return w


def preprocess_audio(x: np.ndarray, rate: int = AUDIO_RATE, n_mels: int = 80) -> np.ndarray:
    """Resample to 16 kHz, STFT (25 ms / 10 ms, n_fft 512, centred), mel, log, per-band normalise.

    Returns float32 (n_mels, frames) with frames = 1 + samples_16k // 160; each band has mean ~0
    and std ~1 over time.
    """
    from scipy import fft, signal

    g = math.gcd(16_000, rate)
    y = signal.resample_poly(x, 16_000 // g, rate // g).astype(np.float32, copy=False)
    n_fft, hop = 512, 160
    y = np.pad(y, n_fft // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(y, n_fft)[::hop] * _window(n_fft, 400)
    spec = fft.rfft(frames, n=n_fft, axis=-1, workers=1)
    power = spec.real ** 2 + spec.imag ** 2
    mel = np.log(mel_filterbank(16_000, n_fft, n_mels) @ power.T.astype(np.float32) + 2.0 ** -24)
    mel -= mel.mean(axis=1, keepdims=True)
    mel /= mel.std(axis=1, keepdims=True) + 1e-5
    return mel
