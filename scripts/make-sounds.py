#!/usr/bin/env python3
"""Writes the game's sounds into assets/sounds/ (standard library only, deterministic).

    python3 scripts/make-sounds.py [OUT_DIR]

shot.wav        a short, dry gun crack
blast.wav       a low explosion with a noisy tail
frag.wav        a tank destroyed: a metal clang over a deep thud
roundStart.wav  a two-note chime for a round start
All are 22,050 Hz, mono, 16-bit PCM, made for this project.
"""
import math
import os
import random
import struct
import sys
import wave

RATE = 22050


def write(path, samples):
    peak = max(1e-9, max(abs(s) for s in samples))
    scale = 0.85 / peak
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(b"".join(struct.pack("<h", int(max(-1.0, min(1.0, s * scale)) * 32767)) for s in samples))


def lowpass(samples, alpha):
    out, y = [], 0.0
    for s in samples:
        y += alpha * (s - y)
        out.append(y)
    return out


def shot(rng):
    n = int(RATE * 0.16)
    noise = [rng.uniform(-1, 1) for _ in range(n)]
    body = lowpass(noise, 0.35)
    out = []
    for i in range(n):
        t = i / RATE
        env = math.exp(-t * 38.0)
        thump = math.sin(2 * math.pi * (180 - 600 * t) * t) * math.exp(-t * 25.0)
        out.append(env * (0.8 * body[i] + 0.2 * noise[i]) + 0.6 * thump)
    return out


def blast(rng):
    n = int(RATE * 0.9)
    noise = [rng.uniform(-1, 1) for _ in range(n)]
    rumble = lowpass(lowpass(noise, 0.05), 0.08)
    crack = lowpass(noise, 0.3)
    out = []
    for i in range(n):
        t = i / RATE
        attack = min(1.0, t / 0.004)
        boom = math.sin(2 * math.pi * (70 - 30 * t) * t) * math.exp(-t * 6.0)
        out.append(attack * (3.0 * rumble[i] * math.exp(-t * 4.0) + 0.5 * crack[i] * math.exp(-t * 18.0) + 0.7 * boom))
    return out


def frag(rng):
    n = int(RATE * 0.7)
    noise = [rng.uniform(-1, 1) for _ in range(n)]
    thud = lowpass(lowpass(noise, 0.04), 0.06)
    out = []
    for i in range(n):
        t = i / RATE
        attack = min(1.0, t / 0.003)
        # A struck steel plate: a few inharmonic partials, each dying at its own pace.
        clang = sum(a * math.sin(2 * math.pi * f * t) * math.exp(-t * d)
                    for f, a, d in ((310.0, 0.5, 9.0), (523.0, 0.35, 12.0), (871.0, 0.25, 16.0), (1290.0, 0.15, 22.0)))
        low = math.sin(2 * math.pi * (55 - 20 * t) * t) * math.exp(-t * 5.0)
        out.append(attack * (0.8 * clang + 2.5 * thud[i] * math.exp(-t * 5.0) + 0.8 * low))
    return out


def chime(_rng):
    out = []
    for f, start, length in ((660.0, 0.0, 0.35), (990.0, 0.14, 0.5)):
        pad = [0.0] * int(RATE * start)
        note = []
        for i in range(int(RATE * length)):
            t = i / RATE
            env = min(1.0, t / 0.01) * math.exp(-t * 7.0)
            note.append(env * (math.sin(2 * math.pi * f * t) + 0.3 * math.sin(4 * math.pi * f * t)))
        seg = pad + note
        if len(out) < len(seg):
            out += [0.0] * (len(seg) - len(out))
        for i, s in enumerate(seg):
            out[i] += 0.5 * s
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "assets", "sounds")
    os.makedirs(out_dir, exist_ok=True)
    for name, make in (("shot", shot), ("blast", blast), ("frag", frag), ("roundStart", chime)):
        path = os.path.join(out_dir, name + ".wav")
        write(path, make(random.Random(name)))
        print(path)


if __name__ == "__main__":
    main()
