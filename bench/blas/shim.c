/*===- shim.c - Another BLAS behind the OpenBLAS API txlc uses -------------===*
 *
 * A benchmark tool (bench/blas_compare.py), not part of txlc. Preloaded
 * (LD_PRELOAD) into a txlc executable, it answers the OpenBLAS functions the
 * executable calls (the generated code's cblas_sgemm / cblas_dgemm, the
 * runtime's thread control and its BLAS line) from another BLAS, loaded
 * with dlopen from $TXL_BLAS_LIBRARY, so that one executable is measured
 * with each BLAS without relinking. Built once per BLAS:
 *
 *   cc -O2 -shared -fPIC -DTXL_SHIM_MKL   shim.c -o mkl.so  -ldl
 *   cc -O2 -shared -fPIC -DTXL_SHIM_BLIS  shim.c -o blis.so -ldl
 *   cc -O2 -shared -fPIC -DTXL_SHIM_SCIPY shim.c -o scipy.so -ldl
 *
 * MKL: oneMKL's single dynamic library (libmkl_rt), its threads set with
 * MKL_Set_Num_Threads. BLIS: its CBLAS layer and bli_thread_set_num_threads.
 * SCIPY: PyPI's scipy-openblas32 (a current OpenBLAS, DYNAMIC_ARCH, every
 * symbol prefixed with `scipy_`).
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void sgemm_fn(int, int, int, int, int, int, float, const float *, int,
                      const float *, int, float, float *, int);
typedef void dgemm_fn(int, int, int, int, int, int, double, const double *,
                      int, const double *, int, double, double *, int);

#if defined(TXL_SHIM_MKL)
#define SGEMM "cblas_sgemm"
#define DGEMM "cblas_dgemm"
#elif defined(TXL_SHIM_BLIS)
#define SGEMM "cblas_sgemm"
#define DGEMM "cblas_dgemm"
#elif defined(TXL_SHIM_SCIPY)
#define SGEMM "scipy_cblas_sgemm"
#define DGEMM "scipy_cblas_dgemm"
#else
#error "define TXL_SHIM_MKL, TXL_SHIM_BLIS or TXL_SHIM_SCIPY"
#endif

static void *library;
static sgemm_fn *sgemm;
static dgemm_fn *dgemm;

static void *symbol(const char *name) {
  void *p = dlsym(library, name);
  if (!p) {
    fprintf(stderr, "blas shim: %s has no %s\n", getenv("TXL_BLAS_LIBRARY"),
            name);
    exit(1);
  }
  return p;
}

__attribute__((constructor)) static void load(void) {
  const char *path = getenv("TXL_BLAS_LIBRARY");
  if (!path || !(library = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "blas shim: cannot load TXL_BLAS_LIBRARY=%s: %s\n",
            path ? path : "(unset)", dlerror());
    exit(1);
  }
  sgemm = (sgemm_fn *)symbol(SGEMM);
  dgemm = (dgemm_fn *)symbol(DGEMM);
}

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc) {
  sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha,
                 const double *a, int lda, const double *b, int ldb,
                 double beta, double *c, int ldc) {
  dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static int threads = 1;

void openblas_set_num_threads(int n) {
  threads = n;
#if defined(TXL_SHIM_MKL)
  ((void (*)(int))symbol("MKL_Set_Num_Threads"))(n);
#elif defined(TXL_SHIM_BLIS)
  ((void (*)(long))symbol("bli_thread_set_num_threads"))(n);
#else
  ((void (*)(int))symbol("scipy_openblas_set_num_threads"))(n);
#endif
}

int openblas_get_num_threads(void) {
#if defined(TXL_SHIM_MKL)
  return ((int (*)(void))symbol("MKL_Get_Max_Threads"))();
#elif defined(TXL_SHIM_BLIS)
  return threads;
#else
  return ((int (*)(void))symbol("scipy_openblas_get_num_threads"))();
#endif
}

static char config[256];

/* The BLAS line's name and version. */
char *openblas_get_config(void) {
#if defined(TXL_SHIM_MKL)
  char version[200];
  ((void (*)(char *, int))symbol("MKL_Get_Version_String"))(version,
                                                           sizeof version);
  snprintf(config, sizeof config, "oneMKL %s", version);
#elif defined(TXL_SHIM_BLIS)
  snprintf(config, sizeof config, "BLIS %s",
           ((const char *(*)(void))symbol("bli_info_get_version_str"))());
#else
  snprintf(config, sizeof config, "%s",
           ((char *(*)(void))symbol("scipy_openblas_get_config"))());
#endif
  return config;
}

static char core[64];

/* The kernels the BLAS chose for this CPU. */
char *openblas_get_corename(void) {
#if defined(TXL_SHIM_MKL)
  /* MKL dispatches per call and names no kernel set; MKL_ENABLE_INSTRUCTIONS
     caps it. */
  snprintf(core, sizeof core, "dispatch");
#elif defined(TXL_SHIM_BLIS)
  int id = ((int (*)(void))symbol("bli_arch_query_id"))();
  snprintf(core, sizeof core, "%s",
           ((const char *(*)(int))symbol("bli_arch_string"))(id));
#else
  snprintf(core, sizeof core, "%s",
           ((char *(*)(void))symbol("scipy_openblas_get_corename"))());
#endif
  return core;
}
