;; Pillow-exact bicubic resize kernels for 8-bit RGB, with 128-bit SIMD (see pilResampleWasm.ts).
;;
;; The same fixed-point arithmetic as pilResample.ts and Pillow's Resample.c: 22-bit integer
;; weights precomputed by the caller (zero weights trimmed: they add nothing), an int32 sum per
;; channel started at the round-half-up bias 1 << 21, then `sum >> 22` clipped to 0..255. The clip
;; is two saturating narrows (i32 -> i16 signed, i16 -> u8 unsigned), which give exactly
;; clamp(sum >> 22, 0, 255). The vertical pass multiplies with i32x4.mul on zero-extended bytes;
;; the horizontal pass uses i32x4.dot_i16x8_s on weights split in two 16-bit halves (see hpass).
;; Either way every sum is the same int32 the C code computes.
;;
;; Built with wabt (`node scripts/build-wasm.mjs`); the bytes are embedded in
;; pilResampleWasmBytes.ts and a unit test rebuilds them from this file and compares.
(module
  (memory (export "memory") 1)

;; Horizontal pass over `rows` source rows (row y at src + y * inStride) into `rows` output rows
  ;; of outW pixels, packed at `out`. bounds: [xmin, count] int32 pairs per output pixel.
  ;; Taps go two at a time through i32x4.dot_i16x8_s (one instruction: 2 taps x 3 channels), which
  ;; needs 16-bit weights, so each 22-bit weight k is split by the caller into k >> 11 (signed) and
  ;; k & 2047: sum(p * k) = (sum(p * (k >> 11)) << 11) + sum(p * (k & 2047)) exactly, the same int32
  ;; the C code computes (every partial sum is within int32, and int32 arithmetic is exact modulo 2^32
  ;; anyway). wts: per output pixel `pstride` bytes: per tap pair, the high weights as i16x8
  ;; [h0 h1 h0 h1 h0 h1 0 0] then the low ones the same way (an odd count's last pair has weight 0
  ;; for its second tap). Pixels: bytes R0 G0 B0 R1 G1 B1 of a pair, swizzled to i16 lanes
  ;; [R0 R1 G0 G1 B0 B1 0 0]. Reads up to 5 bytes past a row's last pixel (the caller pads the
  ;; buffer; weight 0 or unused lanes make them count for nothing); writes exactly the output bytes.
  (func (export "hpass")
    (param $src i32) (param $inStride i32) (param $rows i32) (param $out i32)
    (param $outW i32) (param $bounds i32) (param $wts i32) (param $pstride i32)
    (local $y i32) (local $xx i32) (local $row i32) (local $p i32) (local $o i32) (local $n i32)
    (local $k i32) (local $b i32) (local $kb i32) (local $last i32)
    (local $hi v128) (local $lo v128) (local $v v128) (local $mask v128) (local $half v128) (local $acc v128)
    (local.set $mask (v128.const i8x16 0 16 3 16 1 16 4 16 2 16 5 16 16 16 16 16))
    (local.set $half (i32x4.splat (i32.const 2097152)))
    (local.set $last (i32.sub (local.get $outW) (i32.const 1)))
    (local.set $o (local.get $out))
    (local.set $row (local.get $src))
    (block $done
      (loop $rowLoop
        (br_if $done (i32.ge_u (local.get $y) (local.get $rows)))
        (local.set $b (local.get $bounds))
        (local.set $kb (local.get $wts))
        (local.set $xx (i32.const 0))
        (block $rowDone
          (loop $px
            (br_if $rowDone (i32.ge_u (local.get $xx) (local.get $outW)))
            (local.set $p (i32.add (local.get $row) (i32.mul (i32.load (local.get $b)) (i32.const 3))))
            (local.set $n (i32.load offset=4 (local.get $b)))
            (local.set $k (local.get $kb))
            (local.set $hi (v128.const i32x4 0 0 0 0))
            (local.set $lo (v128.const i32x4 0 0 0 0))
            (block $tapsDone
              (loop $taps
                (br_if $tapsDone (i32.le_s (local.get $n) (i32.const 0)))
                (local.set $v (i8x16.swizzle (v128.load64_zero (local.get $p)) (local.get $mask)))
                (local.set $hi (i32x4.add (local.get $hi) (i32x4.dot_i16x8_s (local.get $v) (v128.load (local.get $k)))))
                (local.set $lo (i32x4.add (local.get $lo) (i32x4.dot_i16x8_s (local.get $v) (v128.load offset=16 (local.get $k)))))
                (local.set $p (i32.add (local.get $p) (i32.const 6)))
                (local.set $k (i32.add (local.get $k) (i32.const 32)))
                (local.set $n (i32.sub (local.get $n) (i32.const 2)))
                (br $taps)))
            (local.set $acc
              (i32x4.shr_s
                (i32x4.add (i32x4.add (i32x4.shl (local.get $hi) (i32.const 11)) (local.get $lo)) (local.get $half))
                (i32.const 22)))
            (local.set $acc (i16x8.narrow_i32x4_s (local.get $acc) (local.get $acc)))
            (local.set $acc (i8x16.narrow_i16x8_u (local.get $acc) (local.get $acc)))
            (if (i32.lt_u (local.get $xx) (local.get $last))
              ;; 4 bytes: the 4th is the next pixel's R, written again right after
              (then (v128.store32_lane 0 (local.get $o) (local.get $acc)))
              ;; a row's last pixel: exactly 3 bytes
              (else
                (v128.store16_lane 0 (local.get $o) (local.get $acc))
                (v128.store8_lane offset=2 2 (local.get $o) (local.get $acc))))
            (local.set $o (i32.add (local.get $o) (i32.const 3)))
            (local.set $b (i32.add (local.get $b) (i32.const 8)))
            (local.set $kb (i32.add (local.get $kb) (local.get $pstride)))
            (local.set $xx (i32.add (local.get $xx) (i32.const 1)))
            (br $px)))
        (local.set $row (i32.add (local.get $row) (local.get $inStride)))
        (local.set $y (i32.add (local.get $y) (i32.const 1)))
        (br $rowLoop))))

  ;; Vertical pass: output rows [from, to) of `stride` bytes each, packed at `out` (row `from`
  ;; first). Source row r (r >= yOffset) is at src + (r - yOffset) * stride. bounds/kk as above,
  ;; indexed by output row. Needs stride >= 16: 16 bytes per step, the last step moved back to end
  ;; at the row's end (it recomputes a few bytes, identically).
  (func (export "vpass")
    (param $src i32) (param $stride i32) (param $out i32) (param $from i32) (param $to i32)
    (param $bounds i32) (param $kk i32) (param $ksize i32) (param $yOffset i32)
    (local $yy i32) (local $r0 i32) (local $n i32) (local $kb i32) (local $i i32) (local $end i32)
    (local $q i32) (local $k i32) (local $m i32) (local $o i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $v v128) (local $lo v128) (local $hi v128) (local $kv v128) (local $half v128)
    (local.set $half (i32x4.splat (i32.const 2097152)))
    (local.set $end (i32.sub (local.get $stride) (i32.const 16)))
    (local.set $o (local.get $out))
    (local.set $yy (local.get $from))
    (block $done
      (loop $rowLoop
        (br_if $done (i32.ge_s (local.get $yy) (local.get $to)))
        (local.set $r0
          (i32.add (local.get $src)
            (i32.mul (i32.sub (i32.load (i32.add (local.get $bounds) (i32.shl (local.get $yy) (i32.const 3)))) (local.get $yOffset))
                     (local.get $stride))))
        (local.set $n (i32.load offset=4 (i32.add (local.get $bounds) (i32.shl (local.get $yy) (i32.const 3)))))
        (local.set $kb (i32.add (local.get $kk) (i32.shl (i32.mul (local.get $yy) (local.get $ksize)) (i32.const 2))))
        (local.set $i (i32.const 0))
        (loop $chunks
          (if (i32.gt_s (local.get $i) (local.get $end)) (then (local.set $i (local.get $end))))
          (local.set $a0 (local.get $half))
          (local.set $a1 (local.get $half))
          (local.set $a2 (local.get $half))
          (local.set $a3 (local.get $half))
          (local.set $q (i32.add (local.get $r0) (local.get $i)))
          (local.set $k (local.get $kb))
          (local.set $m (local.get $n))
          (block $tapsDone
            (loop $taps
              (br_if $tapsDone (i32.le_s (local.get $m) (i32.const 0)))
              (local.set $v (v128.load (local.get $q)))
              (local.set $kv (v128.load32_splat (local.get $k)))
              (local.set $lo (i16x8.extend_low_i8x16_u (local.get $v)))
              (local.set $hi (i16x8.extend_high_i8x16_u (local.get $v)))
              (local.set $a0 (i32x4.add (local.get $a0) (i32x4.mul (i32x4.extend_low_i16x8_u (local.get $lo)) (local.get $kv))))
              (local.set $a1 (i32x4.add (local.get $a1) (i32x4.mul (i32x4.extend_high_i16x8_u (local.get $lo)) (local.get $kv))))
              (local.set $a2 (i32x4.add (local.get $a2) (i32x4.mul (i32x4.extend_low_i16x8_u (local.get $hi)) (local.get $kv))))
              (local.set $a3 (i32x4.add (local.get $a3) (i32x4.mul (i32x4.extend_high_i16x8_u (local.get $hi)) (local.get $kv))))
              (local.set $q (i32.add (local.get $q) (local.get $stride)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (local.set $m (i32.sub (local.get $m) (i32.const 1)))
              (br $taps)))
          (v128.store
            (i32.add (local.get $o) (local.get $i))
            (i8x16.narrow_i16x8_u
              (i16x8.narrow_i32x4_s (i32x4.shr_s (local.get $a0) (i32.const 22)) (i32x4.shr_s (local.get $a1) (i32.const 22)))
              (i16x8.narrow_i32x4_s (i32x4.shr_s (local.get $a2) (i32.const 22)) (i32x4.shr_s (local.get $a3) (i32.const 22)))))
          (local.set $i (i32.add (local.get $i) (i32.const 16)))
          (br_if $chunks (i32.lt_s (i32.sub (local.get $i) (i32.const 16)) (local.get $end))))
        (local.set $o (i32.add (local.get $o) (local.get $stride)))
        (local.set $yy (i32.add (local.get $yy) (i32.const 1)))
        (br $rowLoop))))
)
