#!/usr/bin/env bash
# hard-qr-images.sh — write deliberately degraded variants of clean QR-code PNGs,
# to test how well a QR decoder copes with real-world photos of tickets.
#
# Usage:  tools/hard-qr-images.sh OUTDIR clean1.png [clean2.png ...]
#
# Input:  clean, axis-aligned QR PNGs as written by `qrencode -s PX -m 4`
#         (dark modules on white, quiet zone of QZ modules, default 4).
#         The module size PX is measured from the quiet-zone width
#         (first dark pixel offset / QZ); override with MODULE_PX=n.
# Output: OUTDIR/<input-stem>__<degradation>.png|jpg, one file per degradation.
#         Deterministic: every random step uses a fixed ImageMagick `-seed`
#         (base SEED, default 1) or the script's own LCG, and PNG metadata
#         (timestamps) is stripped, so reruns give byte-identical files with
#         the same ImageMagick version.
# Needs:  ImageMagick 6 `convert` and `identify` (Debian package imagemagick).
#
# Degradations (the ones scaled "per module" use PX, so a 4 px/module and an
# 8 px/module input get the same difficulty relative to the code):
#   rot7, rot33      rotation by 7° / 33° on white, bilinear resampling: a ticket
#                    held slightly / very crooked.
#   rot90, rot180    exact quarter / half turn: phone or ticket upside down.
#   scale2px         area-averaged downscale to ~2 px per module (code far away
#                    or in a low-resolution camera frame).
#   scale1p5px       same, ~1.5 px per module: below the 2 px/module that most
#                    decoders need; expected to be at or past the limit.
#   blur1, blur2     Gaussian blur, sigma = PX/8 and PX/4 (i.e. sigma 1 and 2 at
#                    8 px/module): out of focus / motion-smeared photo.
#   noise            Gaussian luminance noise (attenuate 1.5): dark venue, high ISO.
#   shadow           multiplied by a diagonal gradient, white to 25 % grey, plus a
#                    soft dark blob: uneven light, a hand's or phone's shadow.
#                    Defeats a single global threshold.
#   lowcontrast      levels squeezed to 35 %..65 % grey: faded thermal print or a
#                    dim screen seen in bright light.
#   perspective      perspective warp as if photographed from below and to the
#                    left (top edge ~25 % shorter, both sides skewed).
#   jpeg30           saved as JPEG quality 30: blocky compression artefacts.
#   screenphoto      simulated photo of a phone screen: 3x "screen pixels" with
#                    an RGB sub-pixel/scan-line mask (multiplied), raised black
#                    level, perspective warp onto a dark bezel, nearest-neighbour
#                    resampling at a non-integer ratio (moiré), gamma 0.7, slight
#                    blur and noise, colour JPEG quality 50.
#   busybg           the code (with its quiet zone) pasted unscaled, off-centre,
#                    into a canvas 3x its size filled with a seeded plasma fractal,
#                    random dark bars and finder-pattern look-alikes (distractors),
#                    saved as JPEG quality 90 like a camera photo: a ticket lying
#                    on a cluttered surface.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUTDIR clean.png [clean.png ...]" >&2
  exit 2
fi
outdir=$1
shift
mkdir -p "$outdir"

QZ=${QZ:-4}
SEED=${SEED:-1}
# Common output options: 8-bit, no timestamps or other metadata (determinism).
# shellcheck disable=SC2054 # the commas are part of one ImageMagick argument
PNGOPT=(-depth 8 -strip -define png:exclude-chunks=date,time)

# Tiny deterministic LCG (bash arithmetic), so the busy background does not
# depend on the shell's $RANDOM implementation.
lcg_state=0
lcg() { # lcg MAX -> sets R to an integer in [0, MAX) (no subshell: keeps state)
  lcg_state=$(((lcg_state * 1103515245 + 12345) % 2147483648))
  R=$(((lcg_state / 65536) % $1))
}
# fl EXPR: evaluate a floating-point expression (awk) and print it.
fl() { awk "BEGIN { printf \"%.4f\", $1 }"; }

for in_png in "$@"; do
  stem=$(basename "${in_png%.*}")
  out=$outdir/${stem}__
  read -r W H X <<<"$(identify -format '%w %h ' "$in_png"; convert "$in_png" -trim -format '%X\n' info: | tr -d +)"
  PX=${MODULE_PX:-$((X / QZ))}
  if [[ $PX -lt 1 ]]; then
    echo "$in_png: cannot measure the module size (set MODULE_PX)" >&2
    exit 1
  fi
  base=(convert "$in_png" -colorspace Gray)

  # --- geometry -----------------------------------------------------------
  for a in 7 33 90 180; do
    "${base[@]}" -background white -interpolate Bilinear -rotate "$a" "${PNGOPT[@]}" "${out}rot$a.png"
  done
  "${base[@]}" -filter Triangle -resize "$(fl "200.0 / $PX")%" "${PNGOPT[@]}" "${out}scale2px.png"
  "${base[@]}" -filter Triangle -resize "$(fl "150.0 / $PX")%" "${PNGOPT[@]}" "${out}scale1p5px.png"
  # Corner mapping: TL, TR, BR, BL move inwards by different amounts.
  persp="0,0 $(fl "$W*0.15"),$(fl "$H*0.10")  $W,0 $(fl "$W*0.86"),$(fl "$H*0.02")  $W,$H $(fl "$W*0.98"),$(fl "$H*0.97")  0,$H $(fl "$W*0.02"),$(fl "$H*0.86")"
  "${base[@]}" -virtual-pixel white -interpolate Bilinear -distort Perspective "$persp" "${PNGOPT[@]}" "${out}perspective.png"

  # --- optics / sensor ----------------------------------------------------
  "${base[@]}" -gaussian-blur "0x$(fl "$PX / 8.0")" "${PNGOPT[@]}" "${out}blur1.png"
  "${base[@]}" -gaussian-blur "0x$(fl "$PX / 4.0")" "${PNGOPT[@]}" "${out}blur2.png"
  "${base[@]}" -seed $((SEED + 11)) -attenuate 1.5 +noise Gaussian -colorspace Gray "${PNGOPT[@]}" "${out}noise.png"

  # --- lighting / print ---------------------------------------------------
  "${base[@]}" \
    \( -size "${W}x${H}" -define gradient:angle=135 gradient:white-gray25 \) \
    -compose Multiply -composite \
    \( -size "${W}x${H}" xc:white -fill gray45 -draw "ellipse $(fl "$W*0.30"),$(fl "$H*0.72") $(fl "$W*0.22"),$(fl "$H*0.16") 0,360" -blur "0x$(fl "$W/25")" \) \
    -compose Multiply -composite "${PNGOPT[@]}" "${out}shadow.png"
  "${base[@]}" +level 35%,65% "${PNGOPT[@]}" "${out}lowcontrast.png"

  # --- compression --------------------------------------------------------
  "${base[@]}" -strip -quality 30 "${out}jpeg30.jpg"

  # --- photo of a screen --------------------------------------------------
  # 3x3 mask tile: two rows of R/G/B sub-pixel stripes, one darker scan-line gap.
  W3=$((W * 3)); H3=$((H * 3))
  spersp="0,0 $(fl "$W3*0.08"),$(fl "$H3*0.06")  $W3,0 $(fl "$W3*0.93"),$(fl "$H3*0.02")  $W3,$H3 $(fl "$W3*0.97"),$(fl "$H3*0.95")  0,$H3 $(fl "$W3*0.03"),$(fl "$H3*0.90")"
  convert "$in_png" -colorspace sRGB -type TrueColor -filter point -resize 300% +level 8%,100% \
    \( \( xc:'rgb(255,170,170)' xc:'rgb(170,255,170)' xc:'rgb(170,170,255)' +append \) \
       \( +clone \) \( -size 3x1 xc:'rgb(120,120,120)' \) -append -write mpr:mask +delete \) \
    \( -size "${W3}x${H3}" tile:mpr:mask \) -compose Multiply -composite \
    -virtual-pixel background -background 'rgb(25,25,30)' -interpolate Bilinear -distort Perspective "$spersp" \
    -sample 41.3% -gamma 0.7 -gaussian-blur 0x0.7 \
    -seed $((SEED + 23)) -attenuate 0.4 +noise Gaussian \
    -strip -quality 50 "${out}screenphoto.jpg"

  # --- busy background ----------------------------------------------------
  BW=$((W * 3)); BH=$((H * 3))
  lcg_state=$((SEED * 7919 + W))
  draws=()
  for _ in $(seq 1 24); do
    lcg "$BW"; x=$R; lcg "$BH"; y=$R; lcg $((W / 2)); w=$((R + 4)); lcg $((H / 6)); h=$((R + 3)); lcg 60; g=$R
    draws+=(-fill "gray$g" -draw "rectangle $x,$y $((x + w)),$((y + h))")
  done
  for _ in $(seq 1 6); do # finder-pattern look-alikes (7x7 ring + 3x3 core)
    lcg $((BW - 8 * PX)); x=$R; lcg $((BH - 8 * PX)); y=$R
    draws+=(-fill white -draw "rectangle $x,$y $((x + 7 * PX - 1)),$((y + 7 * PX - 1))"
      -fill black -draw "rectangle $x,$y $((x + 7 * PX - 1)),$((y + 7 * PX - 1))"
      -fill white -draw "rectangle $((x + PX)),$((y + PX)) $((x + 6 * PX - 1)),$((y + 6 * PX - 1))"
      -fill black -draw "rectangle $((x + 2 * PX)),$((y + 2 * PX)) $((x + 5 * PX - 1)),$((y + 5 * PX - 1))")
  done
  convert -size "${BW}x${BH}" -seed $((SEED + 37)) plasma:fractal -blur 0x1 "${draws[@]}" \
    \( "$in_png" -colorspace sRGB -type TrueColor \) -geometry "+$((W * 17 / 10))+$((H * 4 / 10))" -compose Over -composite \
    -strip -quality 90 "${out}busybg.jpg"
done
