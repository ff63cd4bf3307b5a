/* The floating-point type of one build: float, or double with -DRESGEN_F64
 * (the gradient checks). Emitted code and runtime must agree; net.c checks. */
#ifndef RESGEN_REAL_H
#define RESGEN_REAL_H

#ifdef RESGEN_F64
typedef double real;
#define REAL_NAME "f64"
#define REAL_FMA fma /* <math.h>'s, rounded once */
#else
typedef float real;
#define REAL_NAME "f32"
#define REAL_FMA fmaf
#endif

#endif
