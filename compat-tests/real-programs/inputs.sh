# Deterministic inputs for the real-program tests and benchmarks (sourced; needs $PY, a python3).
# make_text FILE [MIB]: deterministic, compressible pseudo-text with a few random runs (default
# 8 MiB: 8 blocks or jobs of 1 MiB for xz and zstd, 64 of pigz's 128 KiB blocks: work for all 4
# threads).
make_text() {
    "$PY" - "$1" "${2:-8}" <<'EOF'
import random, sys
rng = random.Random(20240501)
words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(4096)]
out = bytearray()
size = int(sys.argv[2]) << 20
while len(out) < size:
    if rng.random() < 0.005:
        out += rng.randbytes(rng.randint(64, 4096))
    else:
        out += b" ".join(rng.choices(words, k=64)) + b"\n"
open(sys.argv[1], "wb").write(out[:size])
EOF
}

# make_y4m FILE [FRAMES]: deterministic synthetic video, 320x240 4:2:0, 48 frames by default, of
# textured planes that move and change between frames (so that motion search and frame threads
# have work), values 16..235.
make_y4m() {
    "$PY" - "$1" "${2:-48}" <<'EOF'
import random, sys
W, H, FRAMES = 320, 240, int(sys.argv[2])
rng = random.Random(4242)
table = bytes(16 + (i * 219) // 255 for i in range(256))
tex = rng.randbytes(1 << 20).translate(table)
smooth = bytes(16 + ((i // 7) * 13) % 219 for i in range(1 << 20))
with open(sys.argv[1], "wb") as f:
    f.write(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C420jpeg\n" % (W, H))
    for n in range(FRAMES):
        f.write(b"FRAME\n")
        y = bytearray()
        for r in range(H):
            src = smooth if (r // 40 + n // 12) % 2 else tex
            off = (r * 1031 + n * 3 * (1 + r // 60) + (r // 16) * 17) % ((1 << 20) - W)
            y += src[off:off + W]
        f.write(y)
        for plane in range(2):
            c = bytearray()
            for r in range(H // 2):
                off = (r * 977 + n * 2 + plane * 4099) % ((1 << 20) - W // 2)
                c += smooth[off:off + W // 2]
            f.write(c)
EOF
}
