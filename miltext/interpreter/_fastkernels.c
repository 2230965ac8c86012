/* fp32 kernels of the interpreter (miltext.interpreter.fast_kernels): layer_norm over the last
 * axis, gelu (exact and tanh forms) and softmax over the last axis, each one pass in C where
 * NumPy takes a dozen calls; the small products of linear and matmul, where the BLAS spends
 * more on packing its operands than on their arithmetic; 2-D max pools; the transforms of
 * Winograd's 3x3 convolutions; and the spin its worker threads wait in between a run's pieces.
 * Every function takes C-contiguous float32 buffers (the caller
 * checks; anything else raises TypeError or ValueError here and the caller keeps to NumPy),
 * writes `out` (which may be `x` itself), and returns None. No NumPy headers: the buffer
 * protocol only. The loops are bounded by the buffers' sizes and run without the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
/* the loops' selects (NaN kept, clamps, the sign of x) made branch-free so GCC vectorizes
 * them: no code here reads the floating-point exception flags */
#pragma GCC optimize("no-trapping-math")
#endif

/* The loops are written once, as always-inline bodies, and compiled again inside functions
 * for AVX-512 and for AVX2 with FMA where the compiler can target them, the best the CPU runs
 * chosen when the module loads: fp32 math at 4 lanes (the x86-64 baseline) takes 3 to 7
 * times as long as at 8 or 16. */
#define INLINE static inline __attribute__((always_inline))
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define WIDE_VARIANTS 1
#define AVX512 __attribute__((target("avx512f,avx2,fma")))
#define AVX2 __attribute__((target("avx2,fma")))
#else
#define WIDE_VARIANTS 0
#endif

/* A C-contiguous float32 buffer of obj (writable when asked); -1 with an exception if not. */
static int
get_f32(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "f") != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be float32", what);
        return -1;
    }
    return 0;
}

/* exp(x) in float32, branch-free so the compiler can vectorize the loops that call it:
 * x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to degree 7 (relative error
 * below 1e-8), times 2^n as two powers of two so results down to the subnormals come out.
 * NaN stays NaN; x above 89 gives inf, below -104 gives 0 (as exp rounds there). */
INLINE float
exp_f(float x)
{
    float c = x != x ? 0.0f : x;
    c = c > 89.0f ? 89.0f : c;
    c = c < -104.0f ? -104.0f : c;
    /* round to nearest by adding and taking off 1.5 * 2^23 (exact for |c log2 e| < 2^22) */
    float nf = (c * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = (c - nf * 0.693359375f) - nf * -2.12194440e-4f;     /* ln2 in two parts */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t n = (int32_t)nf;                  /* in [-150, 129] by the clamps */
    int32_t n1 = n / 2, n2 = n - n1;          /* each in [-75, 65]: a normal power of two */
    int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    float y = p * s1 * s2;
    return x != x ? x : y;
}

/* erfc(z) for z >= 0 as t exp(-z^2 + P(t)), t = 1 / (1 + z / 2): the Chebyshev fit the NumPy
 * path uses (relative error below 1.3e-7), so both paths agree to float32 rounding. */
INLINE float
erfc_of_abs(float z)
{
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t + -0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t + -1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t + -0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t + -1.26551223f;
    return t * exp_f(p - z * z);
}
/* ---- the loops ---- */

/* y[0:cols] = x (k values) times columns 0:cols of w (k rows of stride n), plus b[0:cols]. */
INLINE void
linear_row(const float *restrict x, const float *restrict w, const float *restrict b, float *restrict y,
           Py_ssize_t k, Py_ssize_t n, Py_ssize_t cols)
{
    for (Py_ssize_t c = 0; c < cols; c++)
        y[c] = b != NULL ? b[c] : 0.0f;
    for (Py_ssize_t p = 0; p < k; p++) {
        float a = x[p];
        const float *wp = w + p * n;
        for (Py_ssize_t c = 0; c < cols; c++)
            y[c] += a * wp[c];
    }
}

/* ys = x Phi(x) (erfc itself on the negative side, where the small tail keeps its digits), or
 * with tanh_form its tanh approximation. */
INLINE void
gelu_loop(const float *xs, float *ys, Py_ssize_t count, int tanh_form)
{
    if (tanh_form) {
        for (Py_ssize_t i = 0; i < count; i++) {
            float v = xs[i];
            float u = 0.7978845608f * (v + 0.044715f * v * v * v);
            /* (1 + tanh u) / 2 = 1 / (1 + e^-2u): no digits lost where tanh u is near -1 */
            ys[i] = v / (1.0f + exp_f(-2.0f * u));
        }
        return;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        float v = xs[i];
        float r = erfc_of_abs(fabsf(v) * 0.70710678f);
        r = v >= 0.0f ? 2.0f - r : r;        /* erfc(-v / sqrt 2) */
        ys[i] = (0.5f * r) * v;                  /* halved first: no overflow near FLT_MAX */
    }
}

/* The sum of x[i] (squares: of (x[i] - centre)^2) over n values, in double: eight running
 * sums side by side, which the compiler can keep in vector lanes (one sum would wait on each
 * add before the next). */
INLINE double
sum_of(const float *x, Py_ssize_t n, float centre, int squares)
{
    double lanes[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            double v = (double)(x[i + j] - centre);
            lanes[j] += squares ? v * v : v;
        }
    double total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; i < n; i++) {
        double v = (double)(x[i] - centre);
        total += squares ? v * v : v;
    }
    return total;
}

/* The largest of n values, or NaN where one is NaN: sixteen running maxima side by side (one
 * would wait on each compare before the next; a GPT-2 block's softmax spent half its time so),
 * in one vector where the compiler has them (GCC's and clang's vector types: the same loop over
 * an array of sixteen was left scalar, three times as slow). */
INLINE float
max_of(const float *x, Py_ssize_t n)
{
    float top = x[0];
    int nan = 0;
    Py_ssize_t i = 0;
#if defined(__GNUC__)
    typedef float floats __attribute__((vector_size(64)));
    typedef int32_t ints __attribute__((vector_size(64)));
    if (n >= 16) {
        floats lanes, v;
        memcpy(&lanes, x, sizeof lanes);
        ints seen = lanes != lanes;
        for (i = 16; i + 16 <= n; i += 16) {
            memcpy(&v, x + i, sizeof v);
            ints above = v > lanes;
            lanes = (floats)((above & (ints)v) | (~above & (ints)lanes));
            seen |= v != v;
        }
        top = lanes[0];
        for (int j = 0; j < 16; j++) {
            top = lanes[j] > top ? lanes[j] : top;
            nan |= seen[j] != 0;
        }
    }
#endif
    for (; i < n; i++) {
        top = x[i] > top ? x[i] : top;
        nan |= x[i] != x[i];
    }
    return nan ? NAN : top;
}

/* Each row of n values as exp(x - its max) / their sum: a row with NaN or +inf, or all -inf,
 * is NaN throughout, as the definition computes it. */
INLINE void
softmax_loop(const float *xs, float *ys, Py_ssize_t count, Py_ssize_t n)
{
    for (Py_ssize_t row = 0; row < count; row += n) {
        const float *xr = xs + row;
        float *yr = ys + row;
        float top = max_of(xr, n);
        for (Py_ssize_t i = 0; i < n; i++)
            yr[i] = exp_f(xr[i] - top);
        float total = (float)sum_of(yr, n, 0.0f, 0);
        for (Py_ssize_t i = 0; i < n; i++)
            yr[i] /= total;
    }
}

/* Each row of n values less its mean, over the root of its variance + epsilon, then times gs
 * and plus bs (n values each, or NULL); the sums in double. */
INLINE void
layer_norm_loop(const float *xs, float *ys, Py_ssize_t count, Py_ssize_t n, const float *gs,
                const float *bs, double epsilon)
{
    for (Py_ssize_t row = 0; row < count; row += n) {
        const float *xr = xs + row;
        float *yr = ys + row;
        float mean = (float)(sum_of(xr, n, 0.0f, 0) / (double)n);
        float deviation = (float)sqrt(sum_of(xr, n, mean, 1) / (double)n + epsilon);
        for (Py_ssize_t i = 0; i < n; i++)
            yr[i] = (xr[i] - mean) / deviation;
        if (gs != NULL)
            for (Py_ssize_t i = 0; i < n; i++)
                yr[i] *= gs[i];
        if (bs != NULL)
            for (Py_ssize_t i = 0; i < n; i++)
                yr[i] += bs[i];
    }
}

#if defined(__GNUC__) || defined(__clang__)
/* A block's sums are vectors of the target's register width: 16 floats for AVX-512, 8 for
 * AVX2, 4 for the rest (SSE2, NEON). Wider than the registers, GCC splits each vector
 * operation through memory: 16-float vectors on an AVX2 CPU (AMD's Zen 3) took 81 us for a
 * decoder's 16 x 64 x 64 product, 8-float ones 2. */
typedef float f32x16 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x4 __attribute__((vector_size(16)));
/* Rows i0 .. of columns j0 .. j0 + L V of ys (m rows of n) = xs (m rows of k) times ws (k rows
 * of n) plus bs (or NULL), in blocks of ROWS rows summed in V vectors of type T (L floats)
 * held in registers (written as vectors: GCC leaves a block of scalars unvectorized), each
 * weight row loaded once per block; i0 ends past the last whole block. */
#define ROW_BLOCKS(T, L, ROWS, V) \
    for (; i0 + ROWS <= m; i0 += ROWS) { \
        T acc[ROWS][V]; \
        for (int c = 0; c < V; c++) { \
            T start = {0}; \
            if (bs != NULL) \
                memcpy(&start, bs + j0 + L * c, sizeof start); \
            for (int r = 0; r < ROWS; r++) \
                acc[r][c] = start; \
        } \
        const float *xr = xs + i0 * k; \
        for (Py_ssize_t p = 0; p < k; p++) { \
            T w[V]; \
            for (int c = 0; c < V; c++) \
                memcpy(&w[c], ws + p * n + j0 + L * c, sizeof w[c]); \
            for (int r = 0; r < ROWS; r++) { \
                float a = xr[r * k + p]; \
                for (int c = 0; c < V; c++) \
                    acc[r][c] += a * w[c]; \
            } \
        } \
        for (int r = 0; r < ROWS; r++) \
            for (int c = 0; c < V; c++) \
                memcpy(ys + (i0 + r) * n + j0 + L * c, &acc[r][c], sizeof acc[r][c]); \
    }
#else
#define ROW_BLOCKS(T, L, ROWS, V)
#endif

/* Columns j0 .. j0 + L V of every row (L floats a vector of type T): blocks of BIG rows
 * first, then of 4, then the rows left one at a time. */
#define COLUMNS(T, L, V, BIG) { \
    Py_ssize_t i0 = 0; \
    ROW_BLOCKS(T, L, BIG, V) \
    ROW_BLOCKS(T, L, 4, V) \
    for (; i0 < m; i0++) \
        linear_row(xs + i0 * k, ws + j0, bs != NULL ? bs + j0 : NULL, ys + i0 * n + j0, k, n, L * V); \
}

/* ys (m rows of n) = xs (m rows of k) times ws (k rows of n) plus bs (n values, or NULL): a
 * linear layer's product with its weight kept transposed, by blocks of 2 vectors of columns,
 * then 1, then the columns left one row at a time. `wide` (a constant where it is inlined) is
 * the target's: 2, AVX-512's 16-float vectors in blocks of 8 rows (8 rows by 32 columns fill 16
 * of its 32 registers); 1, AVX2's 8-float ones in blocks of 6 rows (12 of its 16); 0, 4-float
 * ones in blocks of 6 rows. For the small products of a decoder this is up to twice the BLAS's
 * speed, whose packing of both operands costs more than their arithmetic. */
INLINE void
linear_loop(const float *restrict xs, const float *restrict ws, const float *restrict bs, float *restrict ys,
            Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, const int wide)
{
    Py_ssize_t j0 = 0;
    if (wide == 2) {
        for (; j0 + 32 <= n; j0 += 32)
            COLUMNS(f32x16, 16, 2, 8)
        if (j0 + 16 <= n) {
            COLUMNS(f32x16, 16, 1, 8)
            j0 += 16;
        }
    } else if (wide == 1) {
        for (; j0 + 16 <= n; j0 += 16)
            COLUMNS(f32x8, 8, 2, 6)
        if (j0 + 8 <= n) {
            COLUMNS(f32x8, 8, 1, 6)
            j0 += 8;
        }
    } else {
        for (; j0 + 8 <= n; j0 += 8)
            COLUMNS(f32x4, 4, 2, 6)
        if (j0 + 4 <= n) {
            COLUMNS(f32x4, 4, 1, 6)
            j0 += 4;
        }
    }
    if (j0 < n)
        for (Py_ssize_t i = 0; i < m; i++)
            linear_row(xs + i * k, ws + j0, bs != NULL ? bs + j0 : NULL, ys + i * n + j0, k, n, n - j0);
}

/* ys (count matrices of m rows of n) = xs (of m rows of k) times ws (of k rows of n), matrix by
 * matrix: attention's products of each head. With `scratch` (k * n values), ws holds each
 * matrix transposed (n rows of k, as attention's keys are), laid out right in scratch first. */
INLINE void
matmul_loop(const float *xs, const float *ws, float *ys, Py_ssize_t count, Py_ssize_t m, Py_ssize_t k,
            Py_ssize_t n, float *scratch, const int wide)
{
    for (Py_ssize_t b = 0; b < count; b++) {
        const float *w = ws + b * k * n;
        if (scratch != NULL) {
            for (Py_ssize_t j = 0; j < n; j++)
                for (Py_ssize_t p = 0; p < k; p++)
                    scratch[p * n + j] = w[j * k + p];
            w = scratch;
        }
        linear_loop(xs + b * m * k, w, NULL, ys + b * m * n, m, k, n, wide);
    }
}

/* ---- Winograd F(2x2, 3x3): a 3x3 convolution of stride 1 as 16 products of 2.25 times fewer
 * multiply-adds. Each 2x2 block of outputs is Y = A' [(G g G') . (B' d B)] A over the 4x4
 * window d under it (Lavin and Gray, 2015); the transforms below are B', G and A' written out.
 * The 16 products between them are the BLAS's (the caller's). ---- */

/* u (16 planes of kc) = G g G' of the 3x3 kernels first .. last of ws (kc times 9 values), in
 * blocks of 64 kernels laid side by side, so the arithmetic runs in vectors, and gathered in
 * `block` before they are stored: the planes lie a power of two apart as often as not, and 16
 * stores a kernel to them would fight over one set of the cache. */
INLINE void
winograd_weight_loop(const float *restrict ws, float *restrict u, Py_ssize_t kc, Py_ssize_t first, Py_ssize_t last)
{
    float g[9][64] = {{0}}, block[16][64];
    for (Py_ssize_t i0 = first; i0 < last; i0 += 64) {
        int count = last - i0 < 64 ? (int)(last - i0) : 64;
        for (int i = 0; i < count; i++)                   /* the block's kernels side by side */
            for (int e = 0; e < 9; e++)
                g[e][i] = ws[9 * (i0 + i) + e];
        for (int i = 0; i < 64; i++) {                    /* (vectorized across the kernels) */
            float gg[4][3];                                   /* G g: 4 rows of 3 */
            for (int col = 0; col < 3; col++) {
                float a = g[col][i], b = g[3 + col][i], c = g[6 + col][i], half = 0.5f * (a + c);
                gg[0][col] = a, gg[1][col] = half + 0.5f * b, gg[2][col] = half - 0.5f * b, gg[3][col] = c;
            }
            for (int r = 0; r < 4; r++) {                     /* then times G' */
                float a = gg[r][0], b = gg[r][1], c = gg[r][2], half = 0.5f * (a + c);
                block[4 * r][i] = a, block[4 * r + 1][i] = half + 0.5f * b;
                block[4 * r + 2][i] = half - 0.5f * b, block[4 * r + 3][i] = c;
            }
        }
        for (int p = 0; p < 16; p++)
            memcpy(u + p * kc + i0, block[p], (size_t)count * sizeof(float));
    }
}

/* v (16 planes, `plane` values apart, of c channels of rows x tw tiles) = B' d B of the 4x4
 * windows of the tile rows row0 .. row0 + rows of xs (c channels of h x w) under `top` and
 * `left` rows and columns of zeros: tile (r, j) reads rows 2r - top .. + 3 and columns
 * 2j - left .. + 3. `line` holds 4 rows of 2 tw + 2 values. */
INLINE void
winograd_in_loop(const float *restrict xs, float *restrict v, Py_ssize_t c, Py_ssize_t h, Py_ssize_t w,
                 Py_ssize_t top, Py_ssize_t left, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t tw,
                 Py_ssize_t plane, float *restrict line)
{
    Py_ssize_t width = 2 * tw + 2;
    Py_ssize_t first = left < width ? left : width;                     /* columns of zeros before x */
    Py_ssize_t inside = w < width - first ? w : width - first;          /* columns of x read */
    for (Py_ssize_t ch = 0; ch < c; ch++)
        for (Py_ssize_t r = 0; r < rows; r++) {
            float *l[4];
            for (int i = 0; i < 4; i++) {
                l[i] = line + i * width;
                Py_ssize_t y = 2 * (row0 + r) + i - top;
                memset(l[i], 0, (size_t)width * sizeof(float));
                if (y >= 0 && y < h && inside > 0)
                    memcpy(l[i] + first, xs + (ch * h + y) * w, (size_t)inside * sizeof(float));
            }
            for (Py_ssize_t x = 0; x < width; x++) {            /* B' d: the rows combined */
                float a = l[0][x], b = l[1][x], cc = l[2][x], d = l[3][x];
                l[0][x] = a - cc, l[3][x] = b - d, l[1][x] = b + cc, l[2][x] = cc - b;
            }
            float *out = v + (ch * rows + r) * tw;
            for (int i = 0; i < 4; i++)                             /* then the columns */
                for (Py_ssize_t j = 0; j < tw; j++) {
                    const float *t = l[i] + 2 * j;
                    out[(4 * i + 0) * plane + j] = t[0] - t[2];
                    out[(4 * i + 1) * plane + j] = t[1] + t[2];
                    out[(4 * i + 2) * plane + j] = t[2] - t[1];
                    out[(4 * i + 3) * plane + j] = t[1] - t[3];
                }
        }
}

/* ys (k channels of ho x wo) rows 2 row0 .. 2 (row0 + rows) = A' m A plus bs (or NULL) of the
 * tiles in m (16 planes of k channels of rows x tw tiles); the outputs past ho and wo (the
 * last tiles' overhang) dropped. `line` holds 2 rows of 2 tw values. */
INLINE void
winograd_out_loop(const float *restrict m, const float *restrict bs, float *restrict ys, Py_ssize_t k,
                  Py_ssize_t ho, Py_ssize_t wo, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t tw,
                  float *restrict line)
{
    Py_ssize_t plane = k * rows * tw, width = 2 * tw < wo ? 2 * tw : wo;
    for (Py_ssize_t ch = 0; ch < k; ch++) {
        float bias = bs != NULL ? bs[ch] : 0.0f;
        for (Py_ssize_t r = 0; r < rows; r++) {
            const float *p = m + (ch * rows + r) * tw;
            for (Py_ssize_t j = 0; j < tw; j++) {
                float s[4], d[4];                                   /* A' m: the rows combined */
                for (int b = 0; b < 4; b++) {
                    float m1 = p[(4 + b) * plane + j], m2 = p[(8 + b) * plane + j];
                    s[b] = p[b * plane + j] + m1 + m2;
                    d[b] = m1 - m2 - p[(12 + b) * plane + j];
                }
                line[2 * j] = s[0] + s[1] + s[2] + bias;            /* then the columns */
                line[2 * j + 1] = s[1] - s[2] - s[3] + bias;
                line[2 * tw + 2 * j] = d[0] + d[1] + d[2] + bias;
                line[2 * tw + 2 * j + 1] = d[1] - d[2] - d[3] + bias;
            }
            for (int i = 0; i < 2; i++) {
                Py_ssize_t y = 2 * (row0 + r) + i;
                if (y < ho)
                    memcpy(ys + (ch * ho + y) * wo, line + i * 2 * tw, (size_t)width * sizeof(float));
            }
        }
    }
}

/* The larger of a and b, NaN when either is (as NumPy's maximum). */
INLINE float
max_nan(float a, float b)
{
    return a > b || a != a ? a : b;
}

/* ys (planes of ho x wo) = the max over each kh x kw window, stride sh x sw, of xs (planes of
 * h x w) under `top` rows and `left` columns of padding that never wins (-inf): the window
 * clipped to x (a window wholly in padding gives -inf). Per output row, the input rows under
 * it are reduced into `line`, its windows of kw into the next w values of `line` (both passes
 * in vectors, branch-free), which are then picked at the stride. */
INLINE void
max_pool_loop(const float *restrict xs, float *restrict ys, Py_ssize_t planes, Py_ssize_t h, Py_ssize_t w,
              Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t top, Py_ssize_t left,
              Py_ssize_t ho, Py_ssize_t wo, float *restrict line)
{
    for (Py_ssize_t p = 0; p < planes; p++)
        for (Py_ssize_t oy = 0; oy < ho; oy++) {
            float *out = ys + (p * ho + oy) * wo;
            Py_ssize_t y0 = oy * sh - top, y1 = y0 + kh < h ? y0 + kh : h;
            y0 = y0 < 0 ? 0 : y0;
            if (y0 >= y1) {                                 /* rows of padding only */
                for (Py_ssize_t ox = 0; ox < wo; ox++)
                    out[ox] = -INFINITY;
                continue;
            }
            memcpy(line, xs + (p * h + y0) * w, (size_t)w * sizeof(float));
            for (Py_ssize_t iy = y0 + 1; iy < y1; iy++) {
                const float *row = xs + (p * h + iy) * w;
                for (Py_ssize_t i = 0; i < w; i++)
                    line[i] = max_nan(line[i], row[i]);
            }
            float *slide = line + w;                        /* slide[i]: the max of line[i .. i + kw) */
            memcpy(slide, line, (size_t)w * sizeof(float));
            for (Py_ssize_t j = 1; j < kw; j++)
                for (Py_ssize_t i = 0; i + j < w; i++)
                    slide[i] = max_nan(slide[i], line[i + j]);
            /* windows from ox0 to ox1 start inside the row; before, in the padding; after, past
             * the row (padding only) */
            Py_ssize_t ox0 = (left + sw - 1) / sw, ox1 = (w - 1 + left) / sw + 1;
            ox1 = ox1 < wo ? ox1 : wo;
            ox0 = ox0 < ox1 ? ox0 : ox1;
            for (Py_ssize_t ox = 0; ox < ox0; ox++) {
                float m = -INFINITY;
                for (Py_ssize_t i = 0; i < ox * sw - left + kw && i < w; i++)
                    m = max_nan(m, line[i]);
                out[ox] = m;
            }
            if (sw == 2)                                    /* a constant stride: vectorized */
                for (Py_ssize_t ox = ox0; ox < ox1; ox++)
                    out[ox] = slide[2 * ox - left];
            else
                for (Py_ssize_t ox = ox0; ox < ox1; ox++)
                    out[ox] = slide[ox * sw - left];
            for (Py_ssize_t ox = ox1; ox < wo; ox++)
                out[ox] = -INFINITY;
        }
}

/* Output rows at least this wide are copied by memcpy (narrower, by a loop). */
#define WIDE_ROW 32

/* cols (c kh kw rows of `rows` x wo values) = the windows under output rows row0 .. row0 + rows
 * of xs (c channels of h x w): row (ch kh + i) kw + j holds, for output (r, q), the input at row
 * (row0 + r) sh + i dh - top and column q sw + j dw - left, zero outside xs (the padding read
 * in place). */
/* The negatives of ys[0 .. count) made 0 (a relu folded into the op before it) as
 * np.maximum(x, 0) makes them: NaN kept, -0 made 0. */
INLINE void
relu_loop(float *restrict ys, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++)
        ys[i] = ys[i] > 0.0f || ys[i] != ys[i] ? ys[i] : 0.0f;
}

/* out[0 .. count) = xs + ys, xs - ys or xs ys (op 0, 1, 2), as NumPy's float32 arithmetic
 * gives it, ys one value for all when `scalar`; out may be xs or ys (an op writing over an
 * input no later op reads). */
INLINE void
binary_loop(const float *xs, const float *ys, float *out, Py_ssize_t count, int op, int scalar)
{
    float y = ys[0];
    if (scalar && op == 0)
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] + y;
    else if (scalar && op == 1)
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] - y;
    else if (scalar)
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] * y;
    else if (op == 0)
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] + ys[i];
    else if (op == 1)
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] - ys[i];
    else
        for (Py_ssize_t i = 0; i < count; i++)
            out[i] = xs[i] * ys[i];
}

/* zeros at out[from .. to) */
INLINE void
zeros(float *restrict out, Py_ssize_t from, Py_ssize_t to)
{
    for (Py_ssize_t p = from; p < to; p++)
        out[p] = 0.0f;
}

/* conv_cols' `rows` x w values of one channel and kernel position where the strides are 1 and
 * the output as wide as the input: output row r is the plane's row y0 + r shifted by `shift`
 * columns, inside from column q0 to q1. The inside rows are one copy of the plane's values
 * (a narrow row's own copy costs more than its values), their outside columns zeroed after. */
INLINE void
shifted_plane(const float *restrict plane, float *restrict out, Py_ssize_t h, Py_ssize_t w, Py_ssize_t y0,
              Py_ssize_t shift, Py_ssize_t rows, Py_ssize_t q0, Py_ssize_t q1)
{
    Py_ssize_t r0 = y0 >= 0 ? 0 : -y0 < rows ? -y0 : rows;            /* the first row inside */
    Py_ssize_t r1 = h - y0 < rows ? h - y0 : rows;                      /* past the last */
    r1 = r1 > r0 ? r1 : r0;
    /* out[p] = plane[offset + p] for p in [r0 w, r1 w), read within the plane: what falls
     * outside it lies in an outside column, zeroed below */
    Py_ssize_t offset = y0 * w + shift, lo = r0 * w, hi = r1 * w;
    Py_ssize_t from = -offset > lo ? -offset : lo, to = h * w - offset < hi ? h * w - offset : hi;
    zeros(out, 0, lo);
    if (from < to) {
        zeros(out, lo, from);
        memcpy(out + from, plane + offset + from, (size_t)(to - from) * sizeof(float));
        zeros(out, to, hi);
    } else
        zeros(out, lo, hi);
    zeros(out, hi, rows * w);
    for (Py_ssize_t r = r0; r < r1; r++) {
        zeros(out + r * w, 0, q0);
        zeros(out + r * w, q1, w);
    }
}

INLINE void
conv_cols_loop(const float *restrict xs, float *restrict cols, Py_ssize_t c, Py_ssize_t h, Py_ssize_t w,
               const Py_ssize_t *restrict geometry, Py_ssize_t wo, Py_ssize_t row0, Py_ssize_t rows)
{
    Py_ssize_t kh = geometry[0], kw = geometry[1], sh = geometry[2], sw = geometry[3], dh = geometry[4];
    Py_ssize_t dw = geometry[5], top = geometry[6], left = geometry[7];
    float *out = cols;
    for (Py_ssize_t ch = 0; ch < c; ch++)
        for (Py_ssize_t i = 0; i < kh; i++)
            for (Py_ssize_t j = 0; j < kw; j++) {
                Py_ssize_t shift = j * dw - left;                   /* output column 0's input column */
                Py_ssize_t q0, q1;                          /* the first inside, and past the last */
                if (sw == 1)                                /* (a division a channel is a third of a 7x7 layer's) */
                    q0 = shift >= 0 ? 0 : -shift, q1 = w > shift ? w - shift : 0;
                else
                    q0 = shift >= 0 ? 0 : (sw - 1 - shift) / sw, q1 = w > shift ? (w - shift + sw - 1) / sw : 0;
                q1 = q1 < wo ? q1 : wo;
                q0 = q0 < q1 ? q0 : q1;
                if (sh == 1 && sw == 1 && wo == w && wo < WIDE_ROW) {
                    shifted_plane(xs + ch * h * w, out, h, w, row0 + i * dh - top, shift, rows, q0, q1);
                    out += rows * wo;
                    continue;
                }
                for (Py_ssize_t r = 0; r < rows; r++, out += wo) {
                    Py_ssize_t y = (row0 + r) * sh + i * dh - top;
                    if (y < 0 || y >= h) {
                        memset(out, 0, (size_t)wo * sizeof(float));
                        continue;
                    }
                    const float *line = xs + (ch * h + y) * w;
                    if (sw == 1 && wo >= WIDE_ROW) {
                        memset(out, 0, (size_t)q0 * sizeof(float));
                        memcpy(out + q0, line + q0 + shift, (size_t)(q1 - q0) * sizeof(float));
                        memset(out + q1, 0, (size_t)(wo - q1) * sizeof(float));
                        continue;
                    }
                    /* loops (a library call a few values long costs more than they do) */
                    Py_ssize_t q = 0;
                    for (; q < q0; q++)
                        out[q] = 0.0f;
                    if (sw == 1)
                        for (; q < q1; q++)
                            out[q] = line[q + shift];
                    else if (sw == 2)                       /* a constant stride: vectorized */
                        for (; q < q1; q++)
                            out[q] = line[2 * q + shift];
                    else
                        for (; q < q1; q++)
                            out[q] = line[q * sw + shift];
                    for (; q < wo; q++)
                        out[q] = 0.0f;
                }
            }
}

/* Loops kept as loops: GCC makes a zeroing or copying loop a call of memset or memcpy, which,
 * for the few values of a narrow conv's rows, costs more than the values (ResNet-18's 7x7
 * layers: 0.6 ms laying out windows a 0.05 ms product then multiplies). */
#if defined(__GNUC__) && !defined(__clang__)
#define LOOPS_KEPT __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define LOOPS_KEPT
#endif

/* Each loop compiled for the baseline and, where possible, for AVX2 and AVX-512. */
#define VARIANT(name, attributes, params, args) \
    static attributes void name params { name##_loop args; }
#define LOOPS(suffix, attributes) \
    VARIANT(gelu##suffix, attributes, (const float *xs, float *ys, Py_ssize_t count, int t), \
            (xs, ys, count, t)) \
    VARIANT(softmax##suffix, attributes, (const float *xs, float *ys, Py_ssize_t count, Py_ssize_t n), \
            (xs, ys, count, n)) \
    VARIANT(layer_norm##suffix, attributes, (const float *xs, float *ys, Py_ssize_t count, Py_ssize_t n, \
            const float *gs, const float *bs, double epsilon), (xs, ys, count, n, gs, bs, epsilon)) \
    VARIANT(linear##suffix, attributes, (const float *xs, const float *ws, const float *bs, float *ys, \
            Py_ssize_t m, Py_ssize_t k, Py_ssize_t n), (xs, ws, bs, ys, m, k, n)) \
    VARIANT(matmul##suffix, attributes, (const float *xs, const float *ws, float *ys, Py_ssize_t count, \
            Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, float *scratch), (xs, ws, ys, count, m, k, n, scratch)) \
    VARIANT(winograd_weight##suffix, attributes, (const float *ws, float *u, Py_ssize_t kc, Py_ssize_t first, \
            Py_ssize_t last), (ws, u, kc, first, last)) \
    VARIANT(winograd_in##suffix, attributes, (const float *xs, float *v, Py_ssize_t c, Py_ssize_t h, \
            Py_ssize_t w, Py_ssize_t top, Py_ssize_t left, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t tw, \
            Py_ssize_t plane, float *line), (xs, v, c, h, w, top, left, row0, rows, tw, plane, line)) \
    VARIANT(winograd_out##suffix, attributes, (const float *m, const float *bs, float *ys, Py_ssize_t k, \
            Py_ssize_t ho, Py_ssize_t wo, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t tw, float *line), \
            (m, bs, ys, k, ho, wo, row0, rows, tw, line)) \
    VARIANT(conv_cols##suffix, attributes LOOPS_KEPT, (const float *xs, float *cols, Py_ssize_t c, Py_ssize_t h, \
            Py_ssize_t w, const Py_ssize_t *geometry, Py_ssize_t wo, Py_ssize_t row0, Py_ssize_t rows), \
            (xs, cols, c, h, w, geometry, wo, row0, rows)) \
    VARIANT(relu##suffix, attributes, (float *ys, Py_ssize_t count), (ys, count)) \
    VARIANT(binary##suffix, attributes, (const float *xs, const float *ys, float *out, Py_ssize_t count, int op, \
            int scalar), (xs, ys, out, count, op, scalar)) \
    VARIANT(max_pool##suffix, attributes, (const float *xs, float *ys, Py_ssize_t planes, Py_ssize_t h, \
            Py_ssize_t w, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t top, \
            Py_ssize_t left, Py_ssize_t ho, Py_ssize_t wo, float *line), \
            (xs, ys, planes, h, w, kh, kw, sh, sw, top, left, ho, wo, line))

#define gelu_plain_loop gelu_loop
#define softmax_plain_loop softmax_loop
#define layer_norm_plain_loop layer_norm_loop
#define linear_plain_loop(...) linear_loop(__VA_ARGS__, 0)
#define matmul_plain_loop(...) matmul_loop(__VA_ARGS__, 0)
#define winograd_weight_plain_loop winograd_weight_loop
#define winograd_in_plain_loop winograd_in_loop
#define winograd_out_plain_loop winograd_out_loop
#define max_pool_plain_loop max_pool_loop
#define conv_cols_plain_loop conv_cols_loop
#define relu_plain_loop relu_loop
#define binary_plain_loop binary_loop
LOOPS(_plain, )
#if WIDE_VARIANTS
#define gelu_avx2_loop gelu_loop
#define softmax_avx2_loop softmax_loop
#define layer_norm_avx2_loop layer_norm_loop
#define linear_avx2_loop(...) linear_loop(__VA_ARGS__, 1)
#define matmul_avx2_loop(...) matmul_loop(__VA_ARGS__, 1)
#define winograd_weight_avx2_loop winograd_weight_loop
#define winograd_in_avx2_loop winograd_in_loop
#define winograd_out_avx2_loop winograd_out_loop
#define max_pool_avx2_loop max_pool_loop
#define conv_cols_avx2_loop conv_cols_loop
#define relu_avx2_loop relu_loop
#define binary_avx2_loop binary_loop
#define gelu_avx512_loop gelu_loop
#define softmax_avx512_loop softmax_loop
#define layer_norm_avx512_loop layer_norm_loop
#define linear_avx512_loop(...) linear_loop(__VA_ARGS__, 2)
#define matmul_avx512_loop(...) matmul_loop(__VA_ARGS__, 2)
#define winograd_weight_avx512_loop winograd_weight_loop
#define winograd_in_avx512_loop winograd_in_loop
#define winograd_out_avx512_loop winograd_out_loop
#define max_pool_avx512_loop max_pool_loop
#define conv_cols_avx512_loop conv_cols_loop
#define relu_avx512_loop relu_loop
#define binary_avx512_loop binary_loop
LOOPS(_avx2, AVX2)
LOOPS(_avx512, AVX512)
#endif

static void (*gelu_run)(const float *, float *, Py_ssize_t, int) = gelu_plain;
static void (*softmax_run)(const float *, float *, Py_ssize_t, Py_ssize_t) = softmax_plain;
static void (*layer_norm_run)(const float *, float *, Py_ssize_t, Py_ssize_t, const float *, const float *,
                              double) = layer_norm_plain;
static void (*linear_run)(const float *, const float *, const float *, float *, Py_ssize_t, Py_ssize_t,
                          Py_ssize_t) = linear_plain;
static void (*matmul_run)(const float *, const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                          Py_ssize_t, float *) = matmul_plain;
static void (*winograd_weight_run)(const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t) =
    winograd_weight_plain;
static void (*winograd_in_run)(const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                               Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, float *) = winograd_in_plain;
static void (*max_pool_run)(const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, float *)
    = max_pool_plain;
static void (*relu_run)(float *, Py_ssize_t) = relu_plain;
static void (*binary_run)(const float *, const float *, float *, Py_ssize_t, int, int) = binary_plain;
static void (*conv_cols_run)(const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, const Py_ssize_t *,
                             Py_ssize_t, Py_ssize_t, Py_ssize_t) = conv_cols_plain;
static void (*winograd_out_run)(const float *, const float *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                Py_ssize_t, Py_ssize_t, Py_ssize_t, float *) = winograd_out_plain;

/* ---- the Python functions ---- */

/* x read and out written, as float32 buffers; -1 with an exception (and nothing held) if not. */
static int
get_two(PyObject *xo, PyObject *oo, Py_buffer *x, Py_buffer *out)
{
    if (get_f32(xo, x, 0, "x") < 0)
        return -1;
    if (get_f32(oo, out, 1, "out") < 0) {
        PyBuffer_Release(x);
        return -1;
    }
    return 0;
}

/* x and out as float32 buffers of one size (out writable), a whole number of rows of n when
 * n > 0; -1 with an exception (and nothing held) if not. */
static int
get_pair(PyObject *xo, PyObject *oo, Py_ssize_t n, Py_buffer *x, Py_buffer *out)
{
    if (get_two(xo, oo, x, out) < 0)
        return -1;
    if (out->len != x->len || (n > 0 && (x->len / 4) % n != 0)) {
        PyBuffer_Release(x);
        PyBuffer_Release(out);
        PyErr_SetString(PyExc_ValueError, "out must have the size of x, a whole number of rows");
        return -1;
    }
    return 0;
}

/* x and out let go: None, what a function that wrote out gives. */
static PyObject *
released(Py_buffer *x, Py_buffer *out)
{
    PyBuffer_Release(x);
    PyBuffer_Release(out);
    Py_RETURN_NONE;
}

/* The row kernels a call may share with the pool's workers (rows_shared). */
enum { GELU, SOFTMAX, LAYER_NORM };

typedef struct {
    int kind, tanh_form;
    const float *x, *gamma, *beta;
    float *out;
    Py_ssize_t count, width;      /* values, and a row's */
    double epsilon;
} rows_call;

static Py_ssize_t rows_shared(const rows_call *call, PyObject *counter);

/* The kernel of `call` over its rows, shared when `counter` is given (not None): the parts this
 * thread ran; -1 with an exception if that counter is not an int64 buffer. With the GIL. */
static Py_ssize_t
rows_run(const rows_call *call, PyObject *counter)
{
    if (counter != NULL && counter != Py_None)
        return rows_shared(call, counter);
    Py_BEGIN_ALLOW_THREADS
    if (call->kind == GELU)
        gelu_run(call->x, call->out, call->count, call->tanh_form);
    else if (call->kind == SOFTMAX)
        softmax_run(call->x, call->out, call->count, call->width);
    else
        layer_norm_run(call->x, call->out, call->count, call->width, call->gamma, call->beta, call->epsilon);
    Py_END_ALLOW_THREADS
    return 0;
}

/* x and out let go: what a row kernel gives (the parts it ran, given a counter; else None), or
 * NULL when `ran` is -1 (the exception set). */
static PyObject *
ran_rows(Py_ssize_t ran, PyObject *counter, Py_buffer *x, Py_buffer *out)
{
    PyBuffer_Release(x);
    PyBuffer_Release(out);
    if (ran < 0)
        return NULL;
    if (counter != NULL && counter != Py_None)
        return PyLong_FromSsize_t(ran);
    Py_RETURN_NONE;
}

static PyObject *
gelu(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo, *co = NULL;
    int tanh_form;
    Py_buffer x, out;
    if (!PyArg_ParseTuple(args, "OOp|O", &xo, &oo, &tanh_form, &co) || get_pair(xo, oo, 0, &x, &out) < 0)
        return NULL;
    rows_call call = {GELU, tanh_form, x.buf, NULL, NULL, out.buf, x.len / 4, 1, 0.0};
    return ran_rows(rows_run(&call, co), co, &x, &out);
}

static PyObject *
softmax(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo, *co = NULL;
    Py_ssize_t n;
    Py_buffer x, out;
    if (!PyArg_ParseTuple(args, "OOn|O", &xo, &oo, &n, &co))
        return NULL;
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "a row must have values");
        return NULL;
    }
    if (get_pair(xo, oo, n, &x, &out) < 0)
        return NULL;
    rows_call call = {SOFTMAX, 0, x.buf, NULL, NULL, out.buf, x.len / 4, n, 0.0};
    return ran_rows(rows_run(&call, co), co, &x, &out);
}

static PyObject *
layer_norm(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo, *go, *bo, *co = NULL;
    double epsilon;
    Py_ssize_t n;
    Py_buffer x, out, g = {0}, b = {0};
    if (!PyArg_ParseTuple(args, "OOOOdn|O", &xo, &oo, &go, &bo, &epsilon, &n, &co))
        return NULL;
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "a row must have values");
        return NULL;
    }
    int have_g = go != Py_None, have_b = bo != Py_None;
    if (get_pair(xo, oo, n, &x, &out) < 0)
        return NULL;
    if (have_g && get_f32(go, &g, 0, "gamma") < 0)
        goto no_gamma;
    if (have_b && get_f32(bo, &b, 0, "beta") < 0)
        goto no_beta;
    if ((have_g && g.len != n * 4) || (have_b && b.len != n * 4)) {
        PyErr_SetString(PyExc_ValueError, "gamma and beta must have the values of one row");
        goto fail;
    }
    rows_call call = {LAYER_NORM, 0, x.buf, have_g ? (const float *)g.buf : NULL,
                      have_b ? (const float *)b.buf : NULL, out.buf, x.len / 4, n, epsilon};
    Py_ssize_t ran = rows_run(&call, co);
    if (have_b)
        PyBuffer_Release(&b);
    if (have_g)
        PyBuffer_Release(&g);
    return ran_rows(ran, co, &x, &out);
fail:
    if (have_b)
        PyBuffer_Release(&b);
no_beta:
    if (have_g)
        PyBuffer_Release(&g);
no_gamma:
    PyBuffer_Release(&out);
    PyBuffer_Release(&x);
    return NULL;
}

/* The operands of a product as float32 buffers: w (the weight, or y) and x read, out written;
 * -1 with an exception (and nothing held) if not. */
static int
get_product(PyObject *wo, PyObject *xo, PyObject *oo, const char *w_name, Py_buffer *w, Py_buffer *x,
            Py_buffer *out)
{
    if (get_f32(wo, w, 0, w_name) < 0)
        return -1;
    if (get_f32(xo, x, 0, "x") < 0) {
        PyBuffer_Release(w);
        return -1;
    }
    if (get_f32(oo, out, 1, "out") < 0) {
        PyBuffer_Release(x);
        PyBuffer_Release(w);
        return -1;
    }
    return 0;
}

/* A product's buffers let go; `result` given back (NULL after an error). */
static PyObject *
released_product(Py_buffer *w, Py_buffer *x, Py_buffer *out, PyObject *result)
{
    PyBuffer_Release(out);
    PyBuffer_Release(x);
    PyBuffer_Release(w);
    return result;
}

static PyObject *
linear(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo, *bo, *oo;
    Py_ssize_t k, n;
    Py_buffer x, w, out, b = {0};
    if (!PyArg_ParseTuple(args, "OOOOnn", &xo, &wo, &bo, &oo, &k, &n))
        return NULL;
    if (k <= 0 || n <= 0) {
        PyErr_SetString(PyExc_ValueError, "k and n must be positive");
        return NULL;
    }
    int have_b = bo != Py_None;
    if (get_product(wo, xo, oo, "weight", &w, &x, &out) < 0)
        return NULL;
    if (have_b && get_f32(bo, &b, 0, "bias") < 0)
        return released_product(&w, &x, &out, NULL);
    Py_ssize_t m = x.len / 4 / k;
    PyObject *result = NULL;
    if (x.len != m * k * 4 || w.len != k * n * 4 || out.len != m * n * 4 || (have_b && b.len != n * 4))
        PyErr_SetString(PyExc_ValueError, "x must be rows of k, weight k rows of n, out rows of n, bias n values");
    else {
        Py_BEGIN_ALLOW_THREADS
        linear_run((const float *)x.buf, (const float *)w.buf, have_b ? (const float *)b.buf : NULL,
                   (float *)out.buf, m, k, n);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    if (have_b)
        PyBuffer_Release(&b);
    return released_product(&w, &x, &out, result);
}

static PyObject *
matmul(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo, *oo;
    Py_ssize_t m, k, n;
    int swap_y;
    Py_buffer x, w, out;
    if (!PyArg_ParseTuple(args, "OOOnnnp", &xo, &wo, &oo, &m, &k, &n, &swap_y))
        return NULL;
    if (m <= 0 || k <= 0 || n <= 0) {
        PyErr_SetString(PyExc_ValueError, "m, k and n must be positive");
        return NULL;
    }
    if (get_product(wo, xo, oo, "y", &w, &x, &out) < 0)
        return NULL;
    Py_ssize_t count = x.len / 4 / (m * k);
    if (x.len != count * m * k * 4 || w.len != count * k * n * 4 || out.len != count * m * n * 4) {
        PyErr_SetString(PyExc_ValueError, "x, y and out must be as many matrices of m by k, k by n and m by n");
        return released_product(&w, &x, &out, NULL);
    }
    float *scratch = NULL;       /* one matrix of y laid out as k rows of n (its size is checked) */
    if (swap_y && (scratch = PyMem_RawMalloc((size_t)(k * n) * sizeof(float))) == NULL)
        return released_product(&w, &x, &out, PyErr_NoMemory());
    Py_BEGIN_ALLOW_THREADS
    matmul_run((const float *)x.buf, (const float *)w.buf, (float *)out.buf, count, m, k, n, scratch);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    return released_product(&w, &x, &out, Py_NewRef(Py_None));
}

/* Past any real tensor's size, below what twice it could overflow: the bound on offsets. */
#define FAR ((Py_ssize_t)1 << 40)

/* Whether a buffer of `bytes` holds exactly a * b * c * d float32 values (every factor
 * positive), worked out by division: no product can overflow. */
static int
holds(Py_ssize_t bytes, Py_ssize_t a, Py_ssize_t b, Py_ssize_t c, Py_ssize_t d)
{
    Py_ssize_t factors[4] = {a, b, c, d}, n = bytes / 4;
    if (bytes % 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        if (factors[i] <= 0 || n % factors[i])
            return 0;
        n /= factors[i];
    }
    return n == 1;
}

static PyObject *
winograd_weight(PyObject *self, PyObject *args)
{
    PyObject *wo, *uo;
    Py_buffer w, u;
    Py_ssize_t first = 0, count = -1;
    if (!PyArg_ParseTuple(args, "OO|nn", &wo, &uo, &first, &count) || get_two(wo, uo, &w, &u) < 0)
        return NULL;
    Py_ssize_t kc = w.len / 36;
    count = count == -1 ? kc - first : count;          /* -1: to the last */
    if (!holds(w.len, kc, 9, 1, 1) || !holds(u.len, kc, 16, 1, 1) || first < 0 || first > kc || count < 0
        || count > kc - first) {
        PyErr_SetString(PyExc_ValueError, "weight must be 3x3 kernels, u 16 values for each; first and count "
                                          "within the kernels");
        PyBuffer_Release(&w);
        PyBuffer_Release(&u);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    winograd_weight_run((const float *)w.buf, (float *)u.buf, kc, first, first + count);
    Py_END_ALLOW_THREADS
    return released(&w, &u);
}

static PyObject *
winograd_in(PyObject *self, PyObject *args)
{
    PyObject *xo, *vo;
    Py_ssize_t c, h, w, top, left, row0, rows, tw;
    Py_buffer x, v;
    if (!PyArg_ParseTuple(args, "OOnnnnnnnn", &xo, &vo, &c, &h, &w, &top, &left, &row0, &rows, &tw)
        || get_two(xo, vo, &x, &v) < 0)
        return NULL;
    float *line = NULL;
    if (!holds(x.len, c, h, w, 1) || !holds(v.len, 16, c, rows, tw) || top < 0 || left < 0 || row0 < 0
        || top > FAR || left > FAR || row0 > FAR)
        PyErr_SetString(PyExc_ValueError, "x must be c channels of h x w, v 16 planes of c x rows x tw");
    else if ((line = PyMem_RawMalloc((size_t)(2 * tw + 2) * 4 * sizeof(float))) == NULL)
        PyErr_NoMemory();
    else {
        Py_BEGIN_ALLOW_THREADS
        winograd_in_run((const float *)x.buf, (float *)v.buf, c, h, w, top, left, row0, rows, tw, c * rows * tw, line);
        Py_END_ALLOW_THREADS
        PyMem_RawFree(line);
        return released(&x, &v);
    }
    PyBuffer_Release(&x);
    PyBuffer_Release(&v);
    return NULL;
}

static PyObject *
winograd_out(PyObject *self, PyObject *args)
{
    PyObject *mo, *bo, *yo;
    Py_ssize_t k, ho, wo, row0, rows, tw;
    Py_buffer m, y, b = {0};
    if (!PyArg_ParseTuple(args, "OOOnnnnnn", &mo, &bo, &yo, &k, &ho, &wo, &row0, &rows, &tw)
        || get_two(mo, yo, &m, &y) < 0)
        return NULL;
    int have_b = bo != Py_None;
    float *line = NULL;
    PyObject *result = NULL;
    if (have_b && get_f32(bo, &b, 0, "bias") < 0)
        have_b = 0;
    else if (!holds(m.len, 16, k, rows, tw) || !holds(y.len, k, ho, wo, 1) || (have_b && !holds(b.len, k, 1, 1, 1))
             || row0 < 0 || row0 > FAR)
        PyErr_SetString(PyExc_ValueError, "m must be 16 planes of k x rows x tw, y k channels of ho x wo, bias k values");
    else if ((line = PyMem_RawMalloc((size_t)tw * 4 * sizeof(float))) == NULL)
        PyErr_NoMemory();
    else {
        Py_BEGIN_ALLOW_THREADS
        winograd_out_run((const float *)m.buf, have_b ? (const float *)b.buf : NULL, (float *)y.buf, k, ho, wo,
                         row0, rows, tw, line);
        Py_END_ALLOW_THREADS
        PyMem_RawFree(line);
        result = Py_NewRef(Py_None);
    }
    if (have_b)
        PyBuffer_Release(&b);
    PyBuffer_Release(&m);
    PyBuffer_Release(&y);
    return result;
}

/* spin(signal, seen, seconds[, done]): waits, without the GIL and without sleeping, until
 * signal[0] (an int64 buffer another thread writes) is no longer `seen` or `seconds` (at most
 * 1) pass; whether it changed. A worker thread that sleeps between the pieces it is handed
 * takes 30-60 us to wake, and runs its next piece on a core the machine clocked down:
 * parallel.py spins its workers between a run's pieces. `done` (an int64 buffer), when given,
 * is set to 1 once the GIL is let go: a worker says its piece is finished so, and the thread
 * spinning on that finds the GIL free (told while the worker held it, it slept on the GIL).
 * `joins`: the wait joins the jobs parts calls post (run_shared). */
static int
get_i64(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    size_t kind = view->format != NULL ? strlen(view->format) : 0;
    if (view->itemsize != 8 || view->len < 8 || kind == 0 || strchr("lq", view->format[kind - 1]) == NULL) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be an int64 buffer", what);
        return -1;
    }
    return 0;
}

/* ---- Work taken in parts from a shared counter. The calling thread posts the call as a job
 * (run_shared, below) that the pool's spinning workers join; every thread running it takes
 * parts (a fetch-and-add of counter[0], an int64 buffer they share) until none is left: a
 * thread that joined late or runs on a slower core takes fewer, and no part waits for the GIL.
 * The products are the BLAS's, called from C (use_blas). ---- */

/* cblas_sgemm of NumPy's OpenBLAS (ILP64 or not), set by use_blas; NULL until then. */
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                           float *, int);
static void *sgemm_address = NULL;
static int sgemm_ilp64 = 0;

/* c (m x n, rows ldc apart) = a (m x k, rows lda apart; or, when a_transposed, a's transpose:
 * k x m, rows lda apart) times b (k x n, rows ldb apart; or, when b_transposed, b's transpose:
 * n x k, rows ldb apart), all row-major. */
static void
sgemm_ex(int a_transposed, int b_transposed, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, const float *a, Py_ssize_t lda,
         const float *b, Py_ssize_t ldb, float *c, Py_ssize_t ldc)
{
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };       /* cblas.h's values */
    int ta = a_transposed ? TRANS : NO_TRANS, tb = b_transposed ? TRANS : NO_TRANS;
    if (sgemm_ilp64)
        ((sgemm64_fn)sgemm_address)(ROW_MAJOR, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    else
        ((sgemm32_fn)sgemm_address)(ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb,
                                    0.0f, c, (int)ldc);
}

/* sgemm_ex with a as given. */
static void
sgemm(int b_transposed, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, const float *a, Py_ssize_t lda, const float *b,
      Py_ssize_t ldb, float *c, Py_ssize_t ldc)
{
    sgemm_ex(0, b_transposed, m, n, k, a, lda, b, ldb, c, ldc);
}

static PyObject *
use_blas(PyObject *self, PyObject *args)
{
    unsigned long long address;
    int ilp64;
    if (!PyArg_ParseTuple(args, "Kp", &address, &ilp64))
        return NULL;
    sgemm_address = (void *)(uintptr_t)address, sgemm_ilp64 = ilp64;
    Py_RETURN_NONE;
}

/* The most floats a call's scratch may take (1 GB): a band's share of a product. */
#define SCRATCH ((double)(1 << 28))

/* The next part of `parts` from the shared counter, or -1 when none is left. */
static Py_ssize_t
next_part(int64_t *counter, Py_ssize_t parts)
{
    int64_t part = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    return part < parts ? (Py_ssize_t)part : -1;
}

/* Claims shrink to a part as the parts left do: the parts left over SPREAD x threads (on two
 * threads, a ResNet-18 run's convs 2-5% faster than one part a claim; a product's claims of
 * narrower column blocks ran slower than halves, its shared operand packed for each). */
#define SPREAD 2

/* The next consecutive parts of `parts` from the shared counter for one of `threads` (guided:
 * a claim is the parts left over SPREAD x threads, one at the least; all that is left when the
 * thread is alone), their first in *first; 0 when none is left. Big claims first, single parts
 * last: the threads end together, and a claim's consecutive parts can be one product (the BLAS
 * packs the shared operand once for it). */
static Py_ssize_t
claim(int64_t *counter, Py_ssize_t parts, Py_ssize_t threads, Py_ssize_t *first)
{
    int64_t at = __atomic_load_n(counter, __ATOMIC_RELAXED);
    for (;;) {
        if (at >= parts)
            return 0;
        Py_ssize_t left = parts - (Py_ssize_t)at;
        Py_ssize_t take = threads <= 1 ? left : (left + SPREAD * threads - 1) / (SPREAD * threads);
        take = take < 1 ? 1 : take;
        if (__atomic_compare_exchange_n(counter, &at, at + take, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *first = (Py_ssize_t)at;
            return take;
        }
    }
}

/* The first of `total` rows (an image's output or tile rows) that band `which` of `bands` holds
 * (band `bands` ends them): the bands even, none more than a row longer than another, so the
 * threads end together. As whole bands of at most `rows` and the rest, ResNet-18's 14x14
 * stride-2 layer had a band of 10 rows and one of 4, and on two threads one thread idled
 * through a third of it. */
static Py_ssize_t
band_row(Py_ssize_t which, Py_ssize_t bands, Py_ssize_t total)
{
    return which * total / bands;
}

/* The buffers of a call that takes its parts from a counter: x and w read, out written, bias
 * read (when have_bias; bias_values NULL for None), counter (int64) bumped; a residual read
 * (get_residual: residual_values NULL for none), added to out where it is written. */
typedef struct {
    Py_buffer x, w, out, bias, counter, residual;
    int have_bias, have_residual;
    const float *bias_values, *residual_values;
} parts_args;

/* The buffers of a parts call, or -1 with an exception (and nothing held); the BLAS must have
 * been given. */
static int
get_parts(PyObject *xo, PyObject *wo, PyObject *bo, PyObject *oo, PyObject *co, parts_args *a)
{
    if (sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no BLAS was given (use_blas)");
        return -1;
    }
    if (get_two(xo, oo, &a->x, &a->out) < 0)
        return -1;
    if (get_f32(wo, &a->w, 0, "w") < 0)
        goto x_out;
    if (bo != Py_None && get_f32(bo, &a->bias, 0, "bias") < 0)
        goto w;
    if (get_i64(co, &a->counter, 1, "counter") < 0)
        goto bias;
    a->have_bias = bo != Py_None;
    a->bias_values = a->have_bias ? a->bias.buf : NULL;
    a->have_residual = 0;
    a->residual_values = NULL;
    return 0;
bias:
    if (bo != Py_None)
        PyBuffer_Release(&a->bias);
w:
    PyBuffer_Release(&a->w);
x_out:
    PyBuffer_Release(&a->x);
    PyBuffer_Release(&a->out);
    return -1;
}

/* a's buffers let go; gives `result` (NULL: the exception set). */
static PyObject *
released_parts(parts_args *a, PyObject *result)
{
    if (a->have_residual)
        PyBuffer_Release(&a->residual);
    if (a->have_bias)
        PyBuffer_Release(&a->bias);
    PyBuffer_Release(&a->counter);
    PyBuffer_Release(&a->w);
    PyBuffer_Release(&a->x);
    PyBuffer_Release(&a->out);
    return result;
}

/* The residual `ro` (None: none) of a parts call whose out it matches in size (float32, read),
 * or -1 with an exception (a's buffers then let go). */
static int
get_residual(PyObject *ro, parts_args *a)
{
    if (ro == Py_None)
        return 0;
    if (get_f32(ro, &a->residual, 0, "residual") < 0) {
        released_parts(a, NULL);
        return -1;
    }
    a->have_residual = 1;
    a->residual_values = a->residual.buf;
    if (a->residual.len != a->out.len) {
        PyErr_SetString(PyExc_ValueError, "the residual must have as many values as y");
        released_parts(a, NULL);
        return -1;
    }
    return 0;
}

/* ---- A call's parts shared with the pool's spinning workers, in C. The caller posts the call
 * as a job, takes parts like any thread, then takes the job back and waits for the workers
 * inside it; a worker spinning between pieces (spin's `joins`) runs a posted job's parts at once,
 * with no task, queue or GIL between. Handed the same call as a Python task, a worker woke up
 * 60-250 us after the caller had started (it waited on the GIL the caller held through its own
 * Python), and the caller waited for the worker's Python again at the end. ---- */
typedef struct job job;
struct job {
    /* parts taken until none is left, with `scratch` floats of the thread's own (NULL when
     * none is asked, or, for a job that can go without, none could be had); the count ran */
    Py_ssize_t (*run)(job *, float *scratch);
    size_t scratch;         /* floats of scratch a thread needs */
    int optional;           /* whether run goes without scratch it could not have */
    int64_t seats;          /* workers that may still join */
    Py_ssize_t threads;     /* the threads that may run it: the caller and the workers asked */
};

static job *posted = NULL;          /* the job workers may join, or NULL */
static int64_t inside = 0;          /* workers between looking at `posted` and leaving its job */
static int64_t spinners = 0;        /* workers spinning now, ready to join */

#if defined(__unix__) || defined(__APPLE__)
/* A forked child has none of its parent's workers, whatever they were doing at the fork. */
static void
forked_child(void)
{
    posted = NULL, inside = 0, spinners = 0;
}
#endif

/* Runs the posted job's parts on this worker, if there is one and a seat is left. */
static void
join_posted(void)
{
    __atomic_fetch_add(&inside, 1, __ATOMIC_SEQ_CST);
    job *j = __atomic_load_n(&posted, __ATOMIC_SEQ_CST);
    if (j != NULL && __atomic_fetch_sub(&j->seats, 1, __ATOMIC_ACQ_REL) > 0) {
        float *scratch = j->scratch ? PyMem_RawMalloc(j->scratch * sizeof(float)) : NULL;
        if (scratch != NULL || !j->scratch || j->optional)
            j->run(j, scratch);
        PyMem_RawFree(scratch);
    }
    __atomic_fetch_sub(&inside, 1, __ATOMIC_SEQ_CST);
}

/* j run on the calling thread with `scratch`, shared with up to `seats` spinning workers when
 * no other job is posted; returns once every part is done (the workers' too): the count this
 * thread ran. Called without the GIL. */
static Py_ssize_t
run_shared(job *j, float *scratch, int64_t seats)
{
    job *none = NULL;
    j->seats = seats;
    j->threads = seats + 1;
    int shared = seats > 0 && __atomic_compare_exchange_n(&posted, &none, j, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    if (!shared)
        j->threads = 1;
    Py_ssize_t ran = j->run(j, scratch);
    if (shared) {
        __atomic_store_n(&posted, NULL, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) != 0) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    return ran;
}

/* The workers a parts call asks to join: counter[1] when the counter has it (parallel.claimed
 * sets it), else none. */
static int64_t
seats_asked(const Py_buffer *counter)
{
    int64_t seats = counter->len >= 16 ? ((const int64_t *)counter->buf)[1] : 0;
    return seats < 0 ? 0 : seats > 256 ? 256 : seats;
}

/* j run on the calling thread with scratch of its own (j->scratch floats; none for a job that
 * goes without, if it cannot be had), shared with the workers `counter` asks for, without the
 * GIL: the count this thread ran; -1 with MemoryError set if the scratch cannot be had. */
static Py_ssize_t
run_call(job *j, const Py_buffer *counter)
{
    float *scratch = j->scratch ? PyMem_RawMalloc(j->scratch * sizeof(float)) : NULL;
    if (scratch == NULL && j->scratch && !j->optional) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t seats = seats_asked(counter);
    Py_ssize_t ran;
    Py_BEGIN_ALLOW_THREADS
    ran = run_shared(j, scratch, seats);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    return ran;
}

/* A job's first phase, which every part of the second needs: parts 0 .. parts - 1 taken from
 * next and counted in done (int64s the threads share) once run; returns when all are done,
 * whichever thread ran them (each part taken is run by a thread that is running, so the wait
 * ends); `scratch` is the thread's, for part. */
static void
first_phase(int64_t *next, int64_t *done, Py_ssize_t parts, void (*part)(const void *, Py_ssize_t, float *),
            const void *job, float *scratch)
{
    Py_ssize_t p;
    while ((p = next_part(next, parts)) >= 0) {
        part(job, p, scratch);
        __atomic_fetch_add(done, 1, __ATOMIC_RELEASE);
    }
    while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < parts) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* bias (NULL: none) added to `rows` rows of `width` values, `stride` apart: a value a row, or
 * (by_column) a value a column. */
static void
add_bias(float *out, const float *bias, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t stride, int by_column)
{
    for (Py_ssize_t r = 0; bias != NULL && r < rows; r++)
        for (Py_ssize_t i = 0; i < width; i++)
            out[r * stride + i] += by_column ? bias[i] : bias[r];
}

/* out (cols columns of `rows` rows, rows ld apart) = the transpose of t (cols x rows), plus
 * bias (cols values, or NULL), in tiles of 32 x 32 so that both sides stay in cache lines. */
static void
turn(const float *t, Py_ssize_t cols, Py_ssize_t rows, const float *bias, float *out, Py_ssize_t ld)
{
    for (Py_ssize_t r0 = 0; r0 < rows; r0 += 32)
        for (Py_ssize_t j0 = 0; j0 < cols; j0 += 32) {
            Py_ssize_t r1 = r0 + 32 < rows ? r0 + 32 : rows, j1 = j0 + 32 < cols ? j0 + 32 : cols;
            for (Py_ssize_t r = r0; r < r1; r++)
                for (Py_ssize_t j = j0; j < j1; j++)
                    out[r * ld + j] = t[j * rows + r] + (bias != NULL ? bias[j] : 0.0f);
        }
}

/* relu_loop over `rows` rows of `width` values, `stride` apart (a part of an op's output,
 * while it is in cache). */
static void
relu_rows(float *out, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t stride)
{
    for (Py_ssize_t r = 0; r < rows; r++)
        relu_run(out + r * stride, width);
}

/* The end of a part's `rows` rows of `width` outputs, `stride` apart (out within a's out): the
 * residual's values at the same places added (an add folded into the op: fusion.py), then the
 * negatives made 0 when relu (one folded after it), while the rows are in the thread's cache. */
static void
finish_rows(const parts_args *a, float *out, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t stride, int relu)
{
    if (a->residual_values != NULL) {
        const float *residual = a->residual_values + (out - (float *)a->out.buf);
        for (Py_ssize_t r = 0; r < rows; r++)
            binary_run(out + r * stride, residual + r * stride, out + r * stride, width, 0, 0);
    }
    if (relu)
        relu_rows(out, rows, width, stride);
}

typedef struct {
    job base;
    parts_args *a;
    Py_ssize_t n, c, h, w, k, ho, wo, top, left, rows, bands;
    int relu;
    const float *weight;    /* the kernels u is transformed from first, or NULL: u is given */
    float *u;
} winograd_job;

/* Kernels of the weight a part of winograd_bands' first phase transforms (a 64x64 layer: 8 parts). */
#define WEIGHT_PART 512

static void
weight_part(const void *job, Py_ssize_t part, float *unused)
{
    const winograd_job *j = job;
    Py_ssize_t kc = j->k * j->c, first = part * WEIGHT_PART, last = first + WEIGHT_PART < kc ? first + WEIGHT_PART : kc;
    winograd_weight_run(j->weight, j->u, kc, first, last);
}

/* winograd_bands' parts, v the thread's scratch (see there). */
static Py_ssize_t
winograd_parts(job *base, float *v)
{
    const winograd_job *j = (const winograd_job *)base;
    const parts_args *a = j->a;
    Py_ssize_t c = j->c, h = j->h, w = j->w, k = j->k, ho = j->ho, wo = j->wo, rows = j->rows, bands = j->bands;
    Py_ssize_t th = (ho + 1) / 2, tw = (wo + 1) / 2, cols = rows * tw;
    float *m = v + (size_t)16 * cols * c, *in_line = m + (size_t)16 * cols * k, *out_line = in_line + (2 * tw + 2) * 4;
    const float *us = a->w.buf;
    Py_ssize_t ran = 0, part;
    if (j->weight != NULL)
        first_phase((int64_t *)a->counter.buf + 2, (int64_t *)a->counter.buf + 3, (k * c + WEIGHT_PART - 1) / WEIGHT_PART,
                    weight_part, j, NULL);
    while ((part = next_part(a->counter.buf, j->n * bands)) >= 0) {
        Py_ssize_t image = part / bands, row0 = band_row(part % bands, bands, th);
        Py_ssize_t these = band_row(part % bands + 1, bands, th) - row0, width = these * tw;
        winograd_in_run((const float *)a->x.buf + (size_t)image * c * h * w, v, c, h, w, j->top, j->left, row0, these,
                        tw, c * width, in_line);
        for (int p = 0; p < 16; p++)
            sgemm(0, k, width, c, us + (size_t)p * k * c, c, v + (size_t)p * c * width, width,
                  m + (size_t)p * k * width, width);
        float *out = (float *)a->out.buf + (size_t)image * k * ho * wo;
        winograd_out_run(m, a->bias_values, out, k, ho, wo, row0, these, tw, out_line);
        Py_ssize_t first = 2 * row0, lines = 2 * these < ho - first ? 2 * these : ho - first;
        finish_rows(a, out + (size_t)first * wo, k, lines * wo, ho * wo, j->relu);
        ran++;
    }
    return ran;
}

/* winograd_bands(x, u, bias, y, counter, n, c, h, w, k, ho, wo, top, left, band, relu[, weight[,
 * residual]]): Winograd's 3x3 correlation of x (n images of c x h x w) with the transformed
 * weights u (16 x k x c), plus bias (k values, or None), into y (n images of k x ho x wo), under
 * `top` and `left` rows and columns of zeros: bands of `band` tile rows taken from counter until
 * none is left, each band's windows transformed, its 16 products by the BLAS, its results
 * transformed (plus residual, float32 of y's size, when given; their negatives made 0 when
 * relu); the count this thread ran. With weight (k x c x 3 x 3), u is first transformed from
 * it, in parts taken from counter[2] and counted in counter[3]. */
static PyObject *
winograd_bands(PyObject *self, PyObject *args)
{
    PyObject *xo, *uo, *bo, *yo, *co, *weighto = Py_None, *ro = Py_None;
    Py_ssize_t n, c, h, w, k, ho, wo, top, left, band;
    int relu;
    parts_args a;
    Py_buffer weight, u;
    if (!PyArg_ParseTuple(args, "OOOOOnnnnnnnnnnp|OO", &xo, &uo, &bo, &yo, &co, &n, &c, &h, &w, &k, &ho, &wo, &top,
                          &left, &band, &relu, &weighto, &ro) || get_parts(xo, uo, bo, yo, co, &a) < 0
        || get_residual(ro, &a) < 0)
        return NULL;
    if (weighto != Py_None) {
        if (get_f32(weighto, &weight, 0, "weight") < 0)
            return released_parts(&a, NULL);
        if (get_f32(uo, &u, 1, "u") < 0) {
            PyBuffer_Release(&weight);
            return released_parts(&a, NULL);
        }
    }
    int given = weighto != Py_None;
    if (ho <= 0 || wo <= 0 || band <= 0 || band > FAR || top < 0 || left < 0 || top > FAR || left > FAR
        || !holds(a.x.len, n, c, h, w) || !holds(a.w.len, 16, k, c, 1) || !holds(a.out.len, n, k, ho, wo)
        || (a.have_bias && !holds(a.bias.len, k, 1, 1, 1))
        || (given && (!holds(weight.len, k, c, 9, 1) || a.counter.len < 32))) {
        if (given) {
            PyBuffer_Release(&weight);
            PyBuffer_Release(&u);
        }
        PyErr_SetString(PyExc_ValueError, "x must be n images of c x h x w, u 16 x k x c, y n images of k x ho x wo, "
                                          "bias k values, weight k x c x 3 x 3 with a counter of 4; the band and "
                                          "padding positive");
        return released_parts(&a, NULL);
    }
    Py_ssize_t th = (ho + 1) / 2, tw = (wo + 1) / 2, rows = band < th ? band : th;
    Py_ssize_t bands = (th + rows - 1) / rows, cols = rows * tw;
    /* v (16 x c x cols), m (16 x k x cols) and a line for each transform: at most SCRATCH
     * floats (the caller sizes the band far below), worked out in double */
    double floats = 16.0 * (double)cols * (double)(c + k) + 12.0 * (double)tw + 8.0;
    PyObject *result = NULL;
    if (floats > SCRATCH || (!sgemm_ilp64 && (double)cols * (double)(c + k) > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "a band of this conv's tiles is too big to hold: give fewer rows");
        goto done;
    }
    winograd_job j = {{winograd_parts, (size_t)floats, 0, 0, 0}, &a, n, c, h, w, k, ho, wo, top, left, rows, bands, relu,
                      given ? weight.buf : NULL, given ? u.buf : NULL};
    Py_ssize_t ran = run_call(&j.base, &a.counter);
    result = ran < 0 ? NULL : PyLong_FromSsize_t(ran);
done:
    if (given) {
        PyBuffer_Release(&weight);
        PyBuffer_Release(&u);
    }
    return released_parts(&a, result);
}

/* Channels of an image a part of winograd_outputs' first phase transforms the windows of. */
#define WINDOWS_PART 32

typedef struct {
    job base;
    parts_args *a;
    Py_ssize_t n, c, h, w, k, ho, wo, top, left, block;
    int relu;
    float *v;               /* every image's transformed windows: n x 16 x c x th tw */
} outputs_job;

/* The windows of WINDOWS_PART channels of an image, `line` the thread's (4 rows of 2 tw + 2). */
static void
windows_part(const void *job, Py_ssize_t part, float *line)
{
    const outputs_job *j = job;
    Py_ssize_t chunks = (j->c + WINDOWS_PART - 1) / WINDOWS_PART, image = part / chunks;
    Py_ssize_t first = part % chunks * WINDOWS_PART, count = j->c - first < WINDOWS_PART ? j->c - first : WINDOWS_PART;
    Py_ssize_t th = (j->ho + 1) / 2, tw = (j->wo + 1) / 2, tiles = th * tw;
    winograd_in_run((const float *)j->a->x.buf + ((size_t)image * j->c + first) * j->h * j->w,
                    j->v + ((size_t)image * 16 * j->c + first) * tiles, count, j->h, j->w, j->top, j->left, 0, th, tw,
                    j->c * tiles, line);
}

/* winograd_outputs' second phase: blocks of `block` output channels taken from counter[0], each
 * block's kernels transformed, multiplied by every image's windows and its results written. */
static Py_ssize_t
outputs_parts(job *base, float *scratch)
{
    outputs_job *j = (outputs_job *)base;
    const parts_args *a = j->a;
    Py_ssize_t c = j->c, k = j->k, ho = j->ho, wo = j->wo, block = j->block;
    Py_ssize_t th = (ho + 1) / 2, tw = (wo + 1) / 2, tiles = th * tw;
    int64_t *counter = a->counter.buf;
    float *u = scratch, *m = u + (size_t)16 * block * c, *line = m + (size_t)16 * block * tiles;
    first_phase(counter + 2, counter + 3, j->n * ((c + WINDOWS_PART - 1) / WINDOWS_PART), windows_part, j, line);
    Py_ssize_t ran = 0, part;
    while ((part = next_part(counter, (k + block - 1) / block)) >= 0) {
        Py_ssize_t first = part * block, outputs = k - first < block ? k - first : block;
        winograd_weight_run((const float *)a->w.buf + (size_t)first * c * 9, u, outputs * c, 0, outputs * c);
        for (Py_ssize_t image = 0; image < j->n; image++) {
            const float *v = j->v + (size_t)image * 16 * c * tiles;
            for (int p = 0; p < 16; p++)
                sgemm(0, outputs, tiles, c, u + (size_t)p * outputs * c, c, v + (size_t)p * c * tiles, tiles,
                      m + (size_t)p * outputs * tiles, tiles);
            float *out = (float *)a->out.buf + ((size_t)image * k + first) * ho * wo;
            winograd_out_run(m, a->bias_values == NULL ? NULL : a->bias_values + first, out, outputs, ho, wo, 0, th,
                             tw, line);
            finish_rows(a, out, 1, outputs * ho * wo, 0, j->relu);
        }
        ran++;
    }
    return ran;
}

/* winograd_outputs(x, w, bias, y, v, counter, n, c, h, wd, k, ho, wo, top, left, block,
 * relu[, residual]): winograd_bands' correlation for few tiles (fewer than the layer has
 * outputs), shared by output channels: first every image's windows transformed into v (n x 16
 * x c x th tw), in parts taken from counter[2] and counted in counter[3]; then blocks of
 * `block` output channels taken from counter[0], each block's kernels of w (k x c x 3 x 3)
 * transformed, multiplied by every image's windows, and their results (plus bias and
 * residual, negatives made 0 when relu) written into y (n x k x ho x wo). Shared with
 * counter[1] spinning workers; the count of blocks this call ran. */
static PyObject *
winograd_outputs(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo_, *bo, *yo, *vo, *co, *ro = Py_None;
    Py_ssize_t n, c, h, wd, k, ho, wo, top, left, block;
    int relu;
    parts_args a;
    Py_buffer v;
    if (!PyArg_ParseTuple(args, "OOOOOOnnnnnnnnnnp|O", &xo, &wo_, &bo, &yo, &vo, &co, &n, &c, &h, &wd, &k, &ho, &wo,
                          &top, &left, &block, &relu, &ro) || get_parts(xo, wo_, bo, yo, co, &a) < 0
        || get_residual(ro, &a) < 0)
        return NULL;
    if (get_f32(vo, &v, 1, "v") < 0)
        return released_parts(&a, NULL);
    PyObject *result = NULL;
    Py_ssize_t th = (ho + 1) / 2, tw = (wo + 1) / 2;
    if (ho <= 0 || wo <= 0 || block <= 0 || block > FAR || top < 0 || left < 0 || top > FAR || left > FAR
        || !holds(a.x.len, n, c, h, wd) || !holds(a.w.len, k, c, 9, 1) || !holds(a.out.len, n, k, ho, wo)
        || !holds(v.len, n, 16, c, th * tw) || a.counter.len < 32 || (a.have_bias && !holds(a.bias.len, k, 1, 1, 1))) {
        PyErr_SetString(PyExc_ValueError, "x must be n images of c x h x w, w k x c x 3 x 3, y n images of k x ho x "
                                          "wo, v n x 16 x c x tiles, bias k values, the counter 4 values; the block "
                                          "and padding positive");
        goto done;
    }
    Py_ssize_t rows = block < k ? block : k;
    /* the block's transformed kernels (16 x rows x c), its products (16 x rows x tiles) and a line */
    double floats = 16.0 * (double)rows * (double)(c + th * tw) + 8.0 * (double)tw + 8.0;
    if (floats > SCRATCH || (!sgemm_ilp64 && (double)c * (double)th * (double)tw * 16.0 > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "a block of this conv's outputs is too big to hold: give fewer");
        goto done;
    }
    outputs_job j = {{outputs_parts, (size_t)floats, 0, 0, 0}, &a, n, c, h, wd, k, ho, wo, top, left, rows, relu,
                     v.buf};
    Py_ssize_t ran = run_call(&j.base, &a.counter);
    result = ran < 0 ? NULL : PyLong_FromSsize_t(ran);
done:
    PyBuffer_Release(&v);
    return released_parts(&a, result);
}

typedef struct {
    job base;
    parts_args *a;
    Py_ssize_t n, c, h, wd, o, ho, wo, rows, bands, blocks, block, depth, g[8];
    int relu;
    float *shared;          /* every band's windows, laid out in a first phase; NULL: each thread's own */
} conv_job;

/* Input channels of a band whose windows a part of conv_bands' first phase lays out. */
#define LAYOUT_PART 16

/* Where band `which` (an image's band) of conv_bands' shared layout lies. */
static float *
shared_band(const conv_job *j, Py_ssize_t which)
{
    return j->shared + (size_t)which * j->depth * j->rows * j->wo;
}

static void
layout_part(const void *job, Py_ssize_t part, float *unused)
{
    const conv_job *j = job;
    Py_ssize_t chunks = (j->c + LAYOUT_PART - 1) / LAYOUT_PART, which = part / chunks, image = which / j->bands;
    Py_ssize_t first = part % chunks * LAYOUT_PART, count = j->c - first < LAYOUT_PART ? j->c - first : LAYOUT_PART;
    Py_ssize_t row0 = band_row(which % j->bands, j->bands, j->ho);
    Py_ssize_t these = band_row(which % j->bands + 1, j->bands, j->ho) - row0;
    conv_cols_run((const float *)j->a->x.buf + ((size_t)image * j->c + first) * j->h * j->wd,
                  shared_band(j, which) + (size_t)first * j->g[0] * j->g[1] * these * j->wo, count, j->h, j->wd, j->g,
                  j->wo, row0, these);
}

/* conv_bands' parts, cols the thread's scratch (see there; none with a shared layout). */
static Py_ssize_t
conv_parts(job *base, float *cols)
{
    const conv_job *j = (const conv_job *)base;
    const parts_args *a = j->a;
    Py_ssize_t c = j->c, h = j->h, wd = j->wd, o = j->o, ho = j->ho, wo = j->wo;
    Py_ssize_t bands = j->bands, blocks = j->blocks, block = j->block, depth = j->depth;
    Py_ssize_t laid = -1, ran = 0, start, count;
    if (j->shared != NULL)
        first_phase((int64_t *)a->counter.buf + 2, (int64_t *)a->counter.buf + 3,
                    j->n * bands * ((c + LAYOUT_PART - 1) / LAYOUT_PART), layout_part, j, NULL);
    while ((count = claim(a->counter.buf, j->n * bands * blocks, base->threads, &start)) > 0) {
        /* the claim's parts, a band's consecutive blocks one product */
        for (Py_ssize_t part = start, end = start + count, next; part < end; part = next) {
            Py_ssize_t which = part / blocks, image = which / bands, row0 = band_row(which % bands, bands, ho);
            next = (which + 1) * blocks < end ? (which + 1) * blocks : end;
            Py_ssize_t first = part % blocks * block, last = (next - which * blocks) * block;
            Py_ssize_t outputs = (last < o ? last : o) - first;
            Py_ssize_t these = band_row(which % bands + 1, bands, ho) - row0, width = these * wo;
            float *out = (float *)a->out.buf + ((size_t)image * o + first) * ho * wo + (size_t)row0 * wo;
            if (j->shared != NULL)
                cols = shared_band(j, which);
            else if (which != laid)
                conv_cols_run((const float *)a->x.buf + (size_t)image * c * h * wd, cols, c, h, wd, j->g, wo, row0,
                              these);
            laid = which;
            sgemm(0, outputs, width, depth, (const float *)a->w.buf + (size_t)first * depth, depth, cols, width, out,
                  ho * wo);
            add_bias(out, a->bias_values == NULL ? NULL : a->bias_values + first, outputs, width, ho * wo, 0);
            finish_rows(a, out, outputs, width, ho * wo, j->relu);
        }
        ran += count;
    }
    return ran;
}

/* conv_bands(x, w, bias, y, counter, geometry, n, c, h, wd, o, ho, wo, band, block, relu[,
 * residual]): the correlation of x (n images of c x h x wd) with w (o x c x kh x kw), plus bias
 * (o values, or None) and residual (float32 of y's size, when given), into y (n images of o x
 * ho x wo), its negatives made 0 when relu; geometry (int64: kh,
 * kw, strides, dilations, top and left padding). Parts (a band of `band` output rows, `block`
 * output channels of it) taken from counter until none is left, each band's windows laid out
 * in C (the padding read in place; once for a band's consecutive parts) and multiplied by the
 * BLAS straight into y; the count this thread ran. Blocks shared with workers (counter[1]) lay
 * out every band once, in a first phase whose parts are taken from counter[2], counted in
 * counter[3]. */
static PyObject *
conv_bands(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo_, *bo, *yo, *co, *go, *ro = Py_None;
    Py_ssize_t n, c, h, wd, o, ho, wo, band, block;
    int relu;
    Py_buffer geometry;
    parts_args a;
    if (!PyArg_ParseTuple(args, "OOOOOOnnnnnnnnnp|O", &xo, &wo_, &bo, &yo, &co, &go, &n, &c, &h, &wd, &o, &ho, &wo,
                          &band, &block, &relu, &ro) || get_parts(xo, wo_, bo, yo, co, &a) < 0
        || get_residual(ro, &a) < 0)
        return NULL;
    if (get_i64(go, &geometry, 0, "geometry") < 0)
        return released_parts(&a, NULL);
    Py_ssize_t g[8];
    int fits = geometry.len == (Py_ssize_t)sizeof g;
    if (fits)
        memcpy(g, geometry.buf, sizeof g);
    PyBuffer_Release(&geometry);
    if (!fits || ho <= 0 || wo <= 0 || band <= 0 || band > FAR || block <= 0 || g[0] <= 0 || g[1] <= 0 || g[2] <= 0 || g[3] <= 0
        || g[4] <= 0 || g[5] <= 0 || g[6] < 0 || g[7] < 0 || g[0] > FAR / g[4] || g[1] > FAR / g[5]
        || g[2] > FAR / ho || g[3] > FAR / wo || g[6] > FAR || g[7] > FAR || !holds(a.x.len, n, c, h, wd)
        || !holds(a.w.len, o, c, g[0], g[1]) || !holds(a.out.len, n, o, ho, wo)
        || (a.have_bias && !holds(a.bias.len, o, 1, 1, 1))) {
        PyErr_SetString(PyExc_ValueError, "x must be n images of c x h x w, w o x c x kh x kw, y n images of "
                                          "o x ho x wo, bias o values; geometry 8 values (kh, kw, sh, sw, dh, dw, "
                                          "top, left), kernel, strides, dilations, band and block positive");
        return released_parts(&a, NULL);
    }
    Py_ssize_t rows = band < ho ? band : ho, bands = (ho + rows - 1) / rows, depth = c * g[0] * g[1];
    double floats = (double)depth * (double)rows * (double)wo;
    if (floats > SCRATCH || (!sgemm_ilp64 && ((double)ho * (double)wo > INT32_MAX || floats > INT32_MAX
                                             || (double)o > INT32_MAX))) {
        PyErr_SetString(PyExc_ValueError, "a band of this conv's windows is too big to hold: give fewer rows");
        return released_parts(&a, NULL);
    }
    /* blocks of a band's outputs on several threads: every band's windows laid out once, in a
     * first phase they share (where the counter has room for it), not by each thread for its own */
    Py_ssize_t blocks = (o + block - 1) / block;
    int shared = blocks > 1 && seats_asked(&a.counter) > 0 && a.counter.len >= 32;
    if (shared && floats * (double)n * (double)bands > SCRATCH) {
        PyErr_SetString(PyExc_ValueError, "this conv's windows are too big to hold: give fewer rows");
        return released_parts(&a, NULL);
    }
    conv_job j = {{conv_parts, shared ? 0 : (size_t)floats, 0, 0, 0}, &a, n, c, h, wd, o, ho, wo, rows, bands, blocks,
                  block, depth, {0}, relu, NULL};
    memcpy(j.g, g, sizeof g);
    if (shared && (j.shared = PyMem_RawMalloc((size_t)floats * n * bands * sizeof(float))) == NULL)
        return released_parts(&a, PyErr_NoMemory());
    Py_ssize_t ran = run_call(&j.base, &a.counter);
    PyMem_RawFree(j.shared);
    return released_parts(&a, ran < 0 ? NULL : PyLong_FromSsize_t(ran));
}

typedef struct {
    job base;
    parts_args *a;
    Py_ssize_t m, k, n, block;
    int transposed;
} product_job;

/* product_columns' parts, turned the thread's scratch for turned blocks (NULL: none, see there). */
static Py_ssize_t
product_parts(job *base, float *turned)
{
    const product_job *j = (const product_job *)base;
    const parts_args *a = j->a;
    Py_ssize_t m = j->m, k = j->k, n = j->n, block = j->block;
    const float *xs = a->x.buf, *ws = a->w.buf;
    float *os = a->out.buf;
    Py_ssize_t blocks = (n + block - 1) / block, ran = 0, part;
    while ((part = next_part(a->counter.buf, blocks)) >= 0) {
        Py_ssize_t col0 = part * block, cols = n - col0 < block ? n - col0 : block;
        const float *bias = a->bias_values == NULL ? NULL : a->bias_values + col0;
        if (turned != NULL) {
            sgemm(1, cols, m, k, ws + (size_t)col0 * k, k, xs, k, turned, m);
            turn(turned, cols, m, bias, os + col0, n);
        } else {
            if (j->transposed)
                sgemm(1, m, cols, k, xs, k, ws + (size_t)col0 * k, k, os + col0, n);
            else
                sgemm(0, m, cols, k, xs, k, ws + col0, n, os + col0, n);
            add_bias(os + col0, bias, m, cols, n, 1);
        }
        ran++;
    }
    return ran;
}

/* product_columns(x, w, bias, out, counter, m, k, n, block, transposed, turned): out (m x n) =
 * x (m x k) times w (k x n; or, when transposed, w is n x k and its transpose is taken) plus
 * bias (n values, or None): blocks of `block` columns taken from counter until none is left,
 * each (when transposed and turned) as w's rows times x's transpose, turned into out; the
 * count this thread ran. */
static PyObject *
product_columns(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo_, *bo, *oo, *co;
    Py_ssize_t m, k, n, block;
    int transposed, turn_it;
    parts_args a;
    if (!PyArg_ParseTuple(args, "OOOOOnnnnpp", &xo, &wo_, &bo, &oo, &co, &m, &k, &n, &block, &transposed, &turn_it)
        || get_parts(xo, wo_, bo, oo, co, &a) < 0)
        return NULL;
    if (block <= 0 || !holds(a.x.len, m, k, 1, 1) || !holds(a.w.len, k, n, 1, 1) || !holds(a.out.len, m, n, 1, 1)
        || (a.have_bias && !holds(a.bias.len, n, 1, 1, 1))) {
        PyErr_SetString(PyExc_ValueError, "x must be m x k, w k x n (or n x k), out m x n, bias n values; block "
                                          "positive");
        return released_parts(&a, NULL);
    }
    if (!sgemm_ilp64 && ((double)m * (double)k > INT32_MAX || (double)k * (double)n > INT32_MAX
                         || (double)m * (double)n > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "these matrices are too big for a BLAS of 32-bit sizes");
        return released_parts(&a, NULL);
    }
    /* a weight as a linear stores it (n x k) multiplies x's transpose: w x' (its rows the block's
     * columns), turned into out while in cache, is 10-35% faster than x w' from the BLAS on a
     * GPT-2 block's linears (to the same bits there); a thread that cannot have the scratch
     * multiplies in the other order */
    int turns = transposed && turn_it && (double)block * (double)m <= SCRATCH;
    product_job j = {{product_parts, turns ? (size_t)block * m : 0, 1, 0, 0}, &a, m, k, n, block, transposed};
    Py_ssize_t ran = run_call(&j.base, &a.counter);
    return released_parts(&a, ran < 0 ? NULL : PyLong_FromSsize_t(ran));
}

/* ---- A stack of matrix products (attention's, a head each): the stack's entries taken from
 * a counter. The operands are views read in place through their strides (a head of a split
 * is one, its rows a whole token apart: no copy of it is made), the BLAS told each matrix's
 * row stride. */

#define STACK_DIMS 8

/* A view's layout as a stack of matrices, from its buffer (so no pointer goes past it): the
 * stack's dims' strides in bytes, the matrices' rows, columns and row stride (floats), and
 * whether they are given transposed (columns one float apart: not; rows one float apart:
 * transposed). -1 where the view is none of these (or strides are negative, or rows overlap). */
typedef struct {
    Py_ssize_t strides[STACK_DIMS];
    Py_ssize_t rows, cols, ld;
    int transposed;
} stack_view;

static int
stack_layout(const Py_buffer *v, Py_ssize_t dims, stack_view *out)
{
    if (v->ndim != dims + 2 || v->strides == NULL)
        return -1;
    const Py_ssize_t *st = v->strides + dims, *sh = v->shape + dims;
    for (Py_ssize_t d = 0; d < dims; d++) {
        if (v->strides[d] < 0)
            return -1;
        out->strides[d] = v->strides[d];
    }
    out->rows = sh[0], out->cols = sh[1];
    /* a dim of one has any stride: it is read as the contiguous one */
    Py_ssize_t row_stride = sh[0] == 1 ? sh[1] * 4 : st[0], col_stride = sh[1] == 1 ? 4 : st[1];
    if (col_stride == 4 && row_stride % 4 == 0 && row_stride >= sh[1] * 4) {
        out->transposed = 0, out->ld = row_stride / 4;
        return 0;
    }
    row_stride = sh[0] == 1 ? 4 : st[0], col_stride = sh[1] == 1 ? sh[0] * 4 : st[1];
    if (row_stride == 4 && col_stride % 4 == 0 && col_stride >= sh[0] * 4) {
        out->transposed = 1, out->ld = col_stride / 4;
        return 0;
    }
    return -1;
}

typedef struct {
    job base;
    const char *x, *y;
    float *out;
    int64_t *counter;
    Py_ssize_t entries, dims, shape[STACK_DIMS];
    stack_view xv, yv;
    Py_ssize_t m, k, n;
} stack_job;

static Py_ssize_t
stack_parts(job *base, float *unused)
{
    const stack_job *j = (const stack_job *)base;
    Py_ssize_t ran = 0, part;
    while ((part = next_part(j->counter, j->entries)) >= 0) {
        Py_ssize_t rest = part, xo = 0, yo = 0;
        for (Py_ssize_t d = j->dims - 1; d >= 0; d--) {
            Py_ssize_t i = rest % j->shape[d];
            rest /= j->shape[d];
            xo += i * j->xv.strides[d], yo += i * j->yv.strides[d];
        }
        sgemm_ex(j->xv.transposed, j->yv.transposed, j->m, j->n, j->k, (const float *)(j->x + xo), j->xv.ld,
                 (const float *)(j->y + yo), j->yv.ld, j->out + (size_t)part * j->m * j->n, j->n);
        ran++;
    }
    return ran;
}

/* products(x, y, out, counter): each matrix of the stack x (..., m, k) times the matching one
 * of y (..., k, n) into out (..., m, n; C-contiguous): x and y float32 views of out's stack
 * dims (a dim of 1 broadcast as stride 0 is fine), each matrix's rows or columns one float
 * apart; entries taken from counter[0], shared with counter[1] spinning workers when the
 * counter has it; the count this thread ran. ValueError for views it cannot read in place. */
static PyObject *
products(PyObject *self, PyObject *args)
{
    PyObject *xo, *yo, *oo, *co;
    Py_buffer x, y, out, counter;
    if (!PyArg_ParseTuple(args, "OOOO", &xo, &yo, &oo, &co))
        return NULL;
    if (sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no BLAS was given (use_blas)");
        return NULL;
    }
    if (PyObject_GetBuffer(xo, &x, PyBUF_RECORDS_RO) < 0)
        return NULL;
    PyObject *result = NULL;
    if (PyObject_GetBuffer(yo, &y, PyBUF_RECORDS_RO) < 0)
        goto x_held;
    if (get_f32(oo, &out, 1, "out") < 0)
        goto y_held;
    if (get_i64(co, &counter, 1, "counter") < 0)
        goto out_held;
    stack_job j = {{stack_parts, 0, 0, 0, 0}, x.buf, y.buf, out.buf, counter.buf, 1, x.ndim - 2};
    int fits = x.ndim >= 2 && x.ndim <= STACK_DIMS + 2 && y.ndim == x.ndim && x.itemsize == 4 && y.itemsize == 4
               && x.format != NULL && y.format != NULL && strcmp(x.format, "f") == 0 && strcmp(y.format, "f") == 0
               && stack_layout(&x, j.dims, &j.xv) == 0 && stack_layout(&y, j.dims, &j.yv) == 0
               && x.shape[x.ndim - 1] == y.shape[y.ndim - 2];
    for (Py_ssize_t d = 0; fits && d < j.dims; d++) {
        fits = x.shape[d] == y.shape[d];
        j.shape[d] = x.shape[d], j.entries *= x.shape[d];
    }
    if (fits) {
        j.m = j.xv.rows, j.k = j.xv.cols, j.n = j.yv.cols;
        fits = j.m > 0 && j.k > 0 && j.n > 0 && holds(out.len, j.entries, j.m, j.n, 1)
               && (sgemm_ilp64 || ((double)j.xv.ld * j.m < INT32_MAX && (double)j.yv.ld * j.k < INT32_MAX
                                   && (double)j.xv.ld * j.k < INT32_MAX && (double)j.yv.ld * j.n < INT32_MAX));
    }
    if (!fits)
        PyErr_SetString(PyExc_ValueError, "x (..., m, k) and y (..., k, n) must be float32 views of one stack, each "
                                          "matrix's rows or columns one float apart, out (..., m, n) C-contiguous");
    else
        result = PyLong_FromSsize_t(run_call(&j.base, &counter));
    PyBuffer_Release(&counter);
out_held:
    PyBuffer_Release(&out);
y_held:
    PyBuffer_Release(&y);
x_held:
    PyBuffer_Release(&x);
    return result;
}

/* Elements a part of binary holds (64 KB of each operand). */
#define ELEMENTS_PART 16384

typedef struct {
    job base;
    const float *x, *y;
    float *out;
    int64_t *counter;
    Py_ssize_t count, repeat;       /* x's values, and y's (repeated along x) */
    int op, relu;
} binary_job;

static Py_ssize_t
binary_parts(job *base, float *unused)
{
    const binary_job *j = (const binary_job *)base;
    Py_ssize_t parts = (j->count + ELEMENTS_PART - 1) / ELEMENTS_PART, ran = 0, part;
    while ((part = next_part(j->counter, parts)) >= 0) {
        Py_ssize_t first = part * ELEMENTS_PART, size = j->count - first < ELEMENTS_PART ? j->count - first
                                                                                     : ELEMENTS_PART;
        if (j->repeat == 1)
            binary_run(j->x + first, j->y, j->out + first, size, j->op, 1);
        for (Py_ssize_t done = 0, run; j->repeat > 1 && done < size; done += run) {
            Py_ssize_t at = (first + done) % j->repeat;     /* y's run along this stretch of x */
            run = size - done < j->repeat - at ? size - done : j->repeat - at;
            binary_run(j->x + first + done, j->y + at, j->out + first + done, run, j->op, 0);
        }
        if (j->relu)
            relu_run(j->out + first, size);
        ran++;
    }
    return ran;
}

/* binary(x, y, out, counter, op, relu): out = x + y, x - y or x y (op 0, 1, 2; float32 buffers,
 * out as long as x and possibly x or y; y as long, or repeated along x: a whole number of
 * times, one value for a scalar), its negatives made 0 when relu: parts of ELEMENTS_PART taken
 * from counter[0], shared with counter[1] spinning workers when the counter has it; the count
 * this call ran. */
static PyObject *
binary(PyObject *self, PyObject *args)
{
    PyObject *xo, *yo, *oo, *co;
    int op, relu;
    Py_buffer x, y, out, counter;
    if (!PyArg_ParseTuple(args, "OOOOip", &xo, &yo, &oo, &co, &op, &relu) || get_two(xo, oo, &x, &out) < 0)
        return NULL;
    if (get_f32(yo, &y, 0, "y") < 0) {
        PyBuffer_Release(&x);
        PyBuffer_Release(&out);
        return NULL;
    }
    PyObject *result = NULL;
    if (get_i64(co, &counter, 1, "counter") < 0)
        goto buffers;
    if (x.len != out.len || y.len == 0 || x.len % y.len != 0 || op < 0 || op > 2) {
        PyErr_SetString(PyExc_ValueError, "x and out must be as long, y as long or a whole number of times shorter; "
                                          "op 0 (+), 1 (-) or 2 (x)");
        goto all;
    }
    binary_job j = {{binary_parts, 0, 0, 0, 0}, x.buf, y.buf, out.buf, counter.buf, x.len / 4, y.len / 4, op, relu};
    result = PyLong_FromSsize_t(run_call(&j.base, &counter));
all:
    PyBuffer_Release(&counter);
buffers:
    PyBuffer_Release(&x);
    PyBuffer_Release(&y);
    PyBuffer_Release(&out);
    return result;
}

typedef struct {
    job base;
    const rows_call *call;
    int64_t *counter;
} rows_job;

/* rows_shared's parts: ELEMENTS_PART values of whole rows (one row at the least) each. */
static Py_ssize_t
rows_parts(job *base, float *unused)
{
    const rows_job *j = (const rows_job *)base;
    const rows_call *call = j->call;
    Py_ssize_t width = call->width, rows = call->count / width, each = ELEMENTS_PART / width;
    each = each < 1 ? 1 : each;
    Py_ssize_t parts = (rows + each - 1) / each, ran = 0, part;
    while ((part = next_part(j->counter, parts)) >= 0) {
        Py_ssize_t first = part * each * width, count = (rows - part * each < each ? rows - part * each : each) * width;
        if (call->kind == GELU)
            gelu_run(call->x + first, call->out + first, count, call->tanh_form);
        else if (call->kind == SOFTMAX)
            softmax_run(call->x + first, call->out + first, count, width);
        else
            layer_norm_run(call->x + first, call->out + first, count, width, call->gamma, call->beta, call->epsilon);
        ran++;
    }
    return ran;
}

/* `call` in parts taken from counter[0] (an int64 buffer), shared with counter[1] spinning
 * workers when the counter has it: the parts this thread ran; -1 with an exception if the
 * counter is not an int64 buffer. */
static Py_ssize_t
rows_shared(const rows_call *call, PyObject *counter_object)
{
    Py_buffer counter;
    if (get_i64(counter_object, &counter, 1, "counter") < 0)
        return -1;
    rows_job j = {{rows_parts, 0, 0, 0, 0}, call, counter.buf};
    Py_ssize_t ran = run_call(&j.base, &counter);
    PyBuffer_Release(&counter);
    return ran;
}

/* max_pool's parts: POOL_PART planes each (a ResNet's stem pool: 16 parts of ~30 us). */
#define POOL_PART 4

typedef struct {
    job base;
    const float *x;
    float *y;
    Py_ssize_t planes, h, w, kh, kw, sh, sw, top, left, ho, wo;
    int64_t *counter;
} pool_job;

static Py_ssize_t
pool_parts(job *base, float *line)
{
    const pool_job *j = (const pool_job *)base;
    Py_ssize_t parts = (j->planes + POOL_PART - 1) / POOL_PART, ran = 0, part;
    while ((part = next_part(j->counter, parts)) >= 0) {
        Py_ssize_t first = part * POOL_PART, count = j->planes - first < POOL_PART ? j->planes - first : POOL_PART;
        max_pool_run(j->x + (size_t)first * j->h * j->w, j->y + (size_t)first * j->ho * j->wo, count, j->h, j->w,
                     j->kh, j->kw, j->sh, j->sw, j->top, j->left, j->ho, j->wo, line);
        ran++;
    }
    return ran;
}

/* max_pool(x, y, planes, h, w, kh, kw, sh, sw, top, left, ho, wo[, counter]): see the methods
 * table. With a counter, in parts of planes taken from counter[0], shared with counter[1]
 * spinning workers when the counter has it: the count this thread ran. */
static PyObject *
max_pool(PyObject *self, PyObject *args)
{
    PyObject *xo, *yo, *co = Py_None;
    Py_ssize_t planes, h, w, kh, kw, sh, sw, top, left, ho, wo;
    Py_buffer x, y, counter;
    if (!PyArg_ParseTuple(args, "OOnnnnnnnnnnn|O", &xo, &yo, &planes, &h, &w, &kh, &kw, &sh, &sw, &top, &left, &ho,
                          &wo, &co) || get_two(xo, yo, &x, &y) < 0)
        return NULL;
    PyObject *result = NULL;
    if (!holds(x.len, planes, h, w, 1) || !holds(y.len, planes, ho, wo, 1) || kh <= 0 || kw <= 0 || sh <= 0
        || sw <= 0 || top < 0 || left < 0 || kh > FAR || kw > FAR || sh > FAR / ho || sw > FAR / wo || top > FAR
        || left > FAR) {
        PyErr_SetString(PyExc_ValueError, "x must be planes of h x w, y planes of ho x wo; kernel and strides positive");
        goto done;
    }
    if (co != Py_None) {
        if (get_i64(co, &counter, 1, "counter") < 0)
            goto done;
        pool_job j = {{pool_parts, (size_t)w * 2, 0, 0, 0}, x.buf, y.buf, planes, h, w, kh, kw, sh, sw, top, left,
                      ho, wo, counter.buf};
        Py_ssize_t ran = run_call(&j.base, &counter);
        PyBuffer_Release(&counter);
        result = ran < 0 ? NULL : PyLong_FromSsize_t(ran);
        goto done;
    }
    float *line = PyMem_RawMalloc((size_t)w * 2 * sizeof(float));
    if (line == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    max_pool_run((const float *)x.buf, (float *)y.buf, planes, h, w, kh, kw, sh, sw, top, left, ho, wo, line);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(line);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&y);
    return result;
}

static PyObject *
spin(PyObject *self, PyObject *args)
{
    PyObject *so, *doneo = Py_None;
    long long seen;
    double seconds;
    int joins = 0;
    Py_buffer signal, done;
    if (!PyArg_ParseTuple(args, "OLd|Op", &so, &seen, &seconds, &doneo, &joins))
        return NULL;
    if (get_i64(so, &signal, 0, "signal") < 0)
        return NULL;
    if (doneo != Py_None && get_i64(doneo, &done, 1, "done") < 0) {
        PyBuffer_Release(&signal);
        return NULL;
    }
    seconds = seconds < 0 ? 0 : seconds > 1 ? 1 : seconds;
    int changed = 0;
    Py_BEGIN_ALLOW_THREADS
    if (doneo != Py_None)
        __atomic_store_n((int64_t *)done.buf, 1, __ATOMIC_RELEASE);
    if (joins)
        __atomic_fetch_add(&spinners, 1, __ATOMIC_SEQ_CST);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned long i = 0;; i++) {
        if (__atomic_load_n((const int64_t *)signal.buf, __ATOMIC_ACQUIRE) != seen) {
            changed = 1;
            break;
        }
        if (joins && __atomic_load_n(&posted, __ATOMIC_RELAXED) != NULL) {
            join_posted();
            clock_gettime(CLOCK_MONOTONIC, &start);     /* awake a while for the next, as after a piece */
            continue;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 63) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) >= seconds)
                break;
        }
    }
    if (joins)
        __atomic_fetch_sub(&spinners, 1, __ATOMIC_SEQ_CST);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&signal);
    if (doneo != Py_None)
        PyBuffer_Release(&done);
    return PyBool_FromLong(changed);
}

/* join(): a woken worker runs the posted job's parts, if one is posted and has a seat. */
static PyObject *
join(PyObject *self, PyObject *unused)
{
    Py_BEGIN_ALLOW_THREADS
    join_posted();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* spinners(): the workers spinning now, ready to join a posted job. */
static PyObject *
spinning(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong((long long)__atomic_load_n(&spinners, __ATOMIC_SEQ_CST));
}

/* The loops by target: "plain" (the baseline), "avx2", "avx512"; `best` the CPU runs, `chosen`
 * the ones running (the best, chosen when the module loads; the tests choose each in turn). */
static const char *const VARIANTS[] = {"plain", "avx2", "avx512"};
static int best = 0, chosen = 0;

/* Every loop's function pointer set to its variant of `suffix`. */
#define USE_LOOPS(suffix) \
    gelu_run = gelu##suffix, softmax_run = softmax##suffix, layer_norm_run = layer_norm##suffix; \
    linear_run = linear##suffix, matmul_run = matmul##suffix; \
    winograd_weight_run = winograd_weight##suffix, winograd_in_run = winograd_in##suffix; \
    winograd_out_run = winograd_out##suffix, max_pool_run = max_pool##suffix, conv_cols_run = conv_cols##suffix; \
    relu_run = relu##suffix, binary_run = binary##suffix

static void
use_loops(int level)
{
    chosen = level;
#if WIDE_VARIANTS
    if (level == 2) {
        USE_LOOPS(_avx512);
        return;
    }
    if (level == 1) {
        USE_LOOPS(_avx2);
        return;
    }
#endif
    USE_LOOPS(_plain);
}

/* loops([name]): the loops running ("avx512", "avx2" or "plain"); given a name, those run
 * from now on (ValueError where the CPU has not got them) and the name of the ones before. */
static PyObject *
loops(PyObject *self, PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|s", &name))
        return NULL;
    const char *before = VARIANTS[chosen];
    if (name != NULL) {
        int level = -1;
        for (int i = 0; i <= best; i++)
            if (strcmp(name, VARIANTS[i]) == 0)
                level = i;
        if (level < 0) {
            PyErr_Format(PyExc_ValueError, "this CPU runs the loops %s at most, not %s", VARIANTS[best], name);
            return NULL;
        }
        use_loops(level);
    }
    return PyUnicode_FromString(before);
}

/* loop_sets(): the names of the loops this CPU runs, the baseline first. */
static PyObject *
loop_sets(PyObject *self, PyObject *unused)
{
    PyObject *names = PyTuple_New(best + 1);
    for (int i = 0; names != NULL && i <= best; i++) {
        PyObject *name = PyUnicode_FromString(VARIANTS[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

static PyMethodDef methods[] = {
    {"gelu", gelu, METH_VARARGS,
     "gelu(x, out, tanh_form[, counter]): x Phi(x), or its tanh approximation, into out (float32 buffers). With "
     "a counter (int64), in parts taken from counter[0], shared with counter[1] spinning workers when given: the "
     "count this call ran."},
    {"softmax", softmax, METH_VARARGS,
     "softmax(x, out, n[, counter]): the softmax of each row of n values into out (parts of rows with a counter, "
     "as gelu's)."},
    {"layer_norm", layer_norm, METH_VARARGS,
     "layer_norm(x, out, gamma, beta, epsilon, n[, counter]): each row of n values normalized into out (parts of "
     "rows with a counter, as gelu's)."},
    {"linear", linear, METH_VARARGS,
     "linear(x, weight, bias, out, k, n): rows of k values times weight (k rows of n) plus bias into out."},
    {"matmul", matmul, METH_VARARGS,
     "matmul(x, y, out, m, k, n, swap_y): each m by k matrix of x times its k by n matrix of y (given as n by k "
     "when swap_y) into out."},
    {"winograd_weight", winograd_weight, METH_VARARGS,
     "winograd_weight(w, u[, first, count]): G g G' of each 3x3 kernel of w (or of `count` from `first`) into u (16 "
     "planes of one value a kernel)."},
    {"winograd_in", winograd_in, METH_VARARGS,
     "winograd_in(x, v, c, h, w, top, left, row0, rows, tw): B' d B of the 4x4 windows of tile rows row0 .. "
     "row0 + rows of x (c x h x w, under top and left rows and columns of zeros) into v (16 x c x rows x tw)."},
    {"winograd_out", winograd_out, METH_VARARGS,
     "winograd_out(m, bias, y, k, ho, wo, row0, rows, tw): A' m A plus bias of the tiles in m (16 x k x rows "
     "x tw) into output rows 2 row0 .. of y (k x ho x wo)."},
    {"max_pool", max_pool, METH_VARARGS,
     "max_pool(x, y, planes, h, w, kh, kw, sh, sw, top, left, ho, wo[, counter]): the max of each window of x "
     "(planes of h x w under top and left padding) into y (planes of ho x wo). With a counter (int64), in parts of "
     "planes taken from counter[0], shared with counter[1] spinning workers when given: the count this call ran."},
    {"spin", spin, METH_VARARGS,
     "spin(signal, seen, seconds[, done[, joins]]): done[0] set to 1 (int64; None: not given) once the GIL is let "
     "go, then waits without sleeping until signal[0] (int64) is not seen, or the time passes; whether it changed. "
     "When joins, the wait runs the parts of every job a parts call posts meanwhile."},
    {"binary", binary, METH_VARARGS,
     "binary(x, y, out, counter, op, relu): out = x + y, x - y or x y (op 0, 1, 2; float32; out as long as x, "
     "possibly x or y; y as long or repeated along x), negatives made 0 when relu, in parts taken from counter[0], shared with counter[1] spinning workers "
     "when given; the count this call ran."},
    {"products", products, METH_VARARGS,
     "products(x, y, out, counter): each matrix of the stack x (..., m, k) times y's (..., k, n) into out (..., m, n; "
     "C-contiguous), x and y float32 views read in place (a matrix's rows or columns one float apart), entries "
     "taken from counter[0], shared with counter[1] spinning workers when given; the count this call ran."},
    {"join", join, METH_NOARGS, "join(): the posted job's parts run on this thread, if one is posted with a seat left."},
    {"spinners", spinning, METH_NOARGS, "spinners(): the threads spinning now that join posted jobs."},
    {"use_blas", use_blas, METH_VARARGS,
     "use_blas(address, ilp64): the cblas_sgemm (64-bit integers when ilp64) the parts' products call."},
    {"winograd_bands", winograd_bands, METH_VARARGS,
     "winograd_bands(x, u, bias, y, counter, n, c, h, w, k, ho, wo, top, left, band, relu[, weight[, residual]]): "
     "Winograd's correlation of x (n x c x h x w) with u (16 x k x c) plus bias (and residual, of y's size) into y "
     "(n x k x ho x wo), its negatives made 0 when relu, "
     "bands of `band` tile rows taken from counter[0] (int64) until none is left, shared with counter[1] spinning "
     "workers when the counter has it; the count this call ran. With weight (k x c x 3 x 3), u is transformed "
     "from it first, in parts from counter[2], counted in counter[3]."},
    {"winograd_outputs", winograd_outputs, METH_VARARGS,
     "winograd_outputs(x, w, bias, y, v, counter, n, c, h, w, k, ho, wo, top, left, block, relu[, residual]): "
     "winograd_bands' "
     "correlation with w (k x c x 3 x 3) shared by blocks of `block` output channels: every image's windows "
     "transformed into v (n x 16 x c x tiles) first, in parts from counter[2] counted in counter[3], then the blocks "
     "taken from counter[0], shared with counter[1] spinning workers; the count of blocks this call ran."},
    {"conv_bands", conv_bands, METH_VARARGS,
     "conv_bands(x, w, bias, y, counter, geometry, n, c, h, w, o, ho, wo, band, block, relu[, residual]): x (n x c "
     "x h x w) correlated with w (o x c x kh x kw) plus bias (and residual, of y's size) into y (n x o x ho x wo), "
     "its negatives made 0 when relu, "
     "geometry (int64) kh, kw, strides, dilations, top, left; parts (`block` output channels of a band of `band` output rows) taken from "
     "counter[0] until none is left, shared with counter[1] spinning workers when given (blocks: every band laid out "
     "once first, in parts from counter[2] counted in counter[3]); the count this call ran."},
    {"product_columns", product_columns, METH_VARARGS,
     "product_columns(x, w, bias, out, counter, m, k, n, block, transposed, turned): x (m x k) times w (k x n, or "
     "its transpose given n x k) plus bias into out (m x n), blocks of `block` columns taken from counter[0] until "
     "none is left (turned: w's rows times x's transpose, turned into out), shared with counter[1] spinning "
     "workers when given; the count this call ran."},
    {"loops", loops, METH_VARARGS,
     "loops([name]): the loops running (\"avx512\", \"avx2\" or \"plain\", the best the CPU runs when the module "
     "loads); given a name, those run from now on (ValueError where the CPU has not got them), and the name of "
     "the ones before is returned."},
    {"loop_sets", loop_sets, METH_NOARGS, "loop_sets(): the names of the loops this CPU runs, the baseline first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastkernels", "fp32 kernels of the interpreter.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fastkernels(void)
{
#if defined(__unix__) || defined(__APPLE__)
    pthread_atfork(NULL, NULL, forked_child);
#endif
#if WIDE_VARIANTS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        best = __builtin_cpu_supports("avx512f") ? 2 : 1;
#endif
    use_loops(best);
    return PyModule_Create(&module);
}
