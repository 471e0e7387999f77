/*===- cl_program_cache.c - CLBlast's programs built once per lit run -----===*
 *
 * Preloaded (LD_PRELOAD) into the plain suite's processes by test/lit.cfg.py
 * when TXL_TEST_CL_CACHE names a folder; a no-op everywhere else.
 *
 * Why: CLBlast, which the OpenCL target's matrix products go through, builds
 * its kernels from OpenCL C source in every process and keeps them in
 * memory only. On a GPU the vendor's driver caches such builds on disk;
 * Intel's OpenCL CPU runtime, on which this suite runs the OpenCL target,
 * has no such cache, and its build of CLBlast's GEMM program took 3 to 5 s
 * of every OpenCL executable's run here (generate-opencl.test starts 34).
 * This library gives the suite the driver cache a GPU would have, for
 * CLBlast's programs only: the txl kernels have the runtime's own
 * (ProgramCache.h, TXL_OPENCL_CACHE_DIR), which the runtime reaches through
 * its own dlopen handle and which this library therefore never sees.
 *
 * How: clCreateProgramWithSource on a one-device context looks up the
 * source, the device's name and version and the driver's version in the
 * folder; a hit returns a program created from the stored binary, a miss the
 * source program, whose binary a successful clBuildProgram stores
 * (temporary file and rename: concurrent tests never see half a file). A
 * program from a stored binary built with other options than the stored
 * ones fails its build with a message on stderr, so a stale entry cannot
 * pass unnoticed. The first test to use each CLBlast program still builds
 * it from source. TXL_TEST_CL_CACHE_VERBOSE=1 prints one line per program:
 * "cl_program_cache: stored <file>" or "cl_program_cache: loaded <file>"
 * (test/Tools/cl-program-cache.test).
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef struct _cl_context *cl_context;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_program *cl_program;

enum {
  kSuccess = 0,
  kBuildProgramFailure = -11,
  kContextDevices = 0x1081,
  kContextNumDevices = 0x1083,
  kDeviceName = 0x102B,
  kDriverVersion = 0x102D,
  kDeviceVersion = 0x102F,
  kProgramBinarySizes = 0x1165,
  kProgramBinaries = 0x1166,
};

typedef cl_program (*CreateWithSource)(cl_context, cl_uint, const char **,
                                       const size_t *, cl_int *);
typedef cl_program (*CreateWithBinary)(cl_context, cl_uint,
                                       const cl_device_id *, const size_t *,
                                       const unsigned char **, cl_int *,
                                       cl_int *);
typedef cl_int (*Build)(cl_program, cl_uint, const cl_device_id *,
                        const char *, void (*)(cl_program, void *), void *);
typedef cl_int (*GetContextInfo)(cl_context, cl_uint, size_t, void *,
                                 size_t *);
typedef cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *,
                                size_t *);
typedef cl_int (*GetProgramInfo)(cl_program, cl_uint, size_t, void *,
                                 size_t *);

/* The loader the calling library was linked against: already loaded when
 * it calls us. */
static void *real(const char *name) {
  static void *handle;
  if (!handle)
    handle = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    handle = dlopen("libOpenCL.so.1", RTLD_NOW);
  return handle ? dlsym(handle, name) : NULL;
}

/* Programs this library created, with their cache file and, for those
 * from a stored binary, the options they were built with. */
struct Entry {
  cl_program program;
  char path[4096];
  char *options; /* NULL: from source */
  struct Entry *next;
};
static struct Entry *entries;

static void say(const char *what, const char *path) {
  const char *verbose = getenv("TXL_TEST_CL_CACHE_VERBOSE");
  if (verbose && strcmp(verbose, "1") == 0)
    fprintf(stderr, "cl_program_cache: %s %s\n", what, path);
}
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static int deviceString(cl_device_id device, cl_uint what, char *out,
                        size_t size) {
  GetDeviceInfo info = (GetDeviceInfo)real("clGetDeviceInfo");
  return info && info(device, what, size, out, NULL) == kSuccess ? 0 : -1;
}

/* The cache file of (source, device): two FNV-1a hashes, 128 bits. */
static int cachePath(const char *folder, cl_device_id device, cl_uint count,
                     const char **strings, const size_t *lengths, char *path,
                     size_t size) {
  char name[256], version[256], driver[256];
  if (deviceString(device, kDeviceName, name, sizeof name) ||
      deviceString(device, kDeviceVersion, version, sizeof version) ||
      deviceString(device, kDriverVersion, driver, sizeof driver))
    return -1;
  uint64_t a = 14695981039346656037ull, b = 0x9e3779b97f4a7c15ull;
  const char *parts[] = {name, version, driver};
  for (int i = 0; i < 3; ++i) {
    a = fnv1a(a, parts[i], strlen(parts[i]) + 1);
    b = fnv1a(b, parts[i], strlen(parts[i]) + 1);
  }
  for (cl_uint i = 0; i < count; ++i) {
    size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    a = fnv1a(a, strings[i], n);
    b = fnv1a(b, strings[i], n);
  }
  return snprintf(path, size, "%s/%016llx%016llx.clblast", folder,
                  (unsigned long long)a, (unsigned long long)b) <
                 (int)size
             ? 0
             : -1;
}

/* Reads a cache file: the build options, a newline, the binary. */
static unsigned char *readEntry(const char *path, char **options,
                                size_t *binarySize) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = size > 0 ? malloc((size_t)size) : NULL;
  if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  unsigned char *newline = memchr(data, '\n', (size_t)size);
  if (!newline) {
    free(data);
    return NULL;
  }
  *options = strndup((const char *)data, (size_t)(newline - data));
  *binarySize = (size_t)size - (size_t)(newline + 1 - data);
  memmove(data, newline + 1, *binarySize);
  return data;
}

static void remember(cl_program program, const char *path, char *options) {
  struct Entry *e = calloc(1, sizeof *e);
  if (!e)
    return;
  e->program = program;
  snprintf(e->path, sizeof e->path, "%s", path);
  e->options = options;
  pthread_mutex_lock(&lock);
  e->next = entries;
  entries = e;
  pthread_mutex_unlock(&lock);
}

cl_program clCreateProgramWithSource(cl_context context, cl_uint count,
                                     const char **strings,
                                     const size_t *lengths, cl_int *error) {
  CreateWithSource create = (CreateWithSource)real("clCreateProgramWithSource");
  const char *folder = getenv("TXL_TEST_CL_CACHE");
  GetContextInfo contextInfo = (GetContextInfo)real("clGetContextInfo");
  cl_uint devices = 0;
  cl_device_id device;
  char path[4096];
  if (!folder || !*folder || !contextInfo ||
      contextInfo(context, kContextNumDevices, sizeof devices, &devices,
                  NULL) != kSuccess ||
      devices != 1 ||
      contextInfo(context, kContextDevices, sizeof device, &device, NULL) !=
          kSuccess ||
      cachePath(folder, device, count, strings, lengths, path, sizeof path))
    return create(context, count, strings, lengths, error);
  char *options = NULL;
  size_t size = 0;
  unsigned char *binary = readEntry(path, &options, &size);
  if (binary) {
    CreateWithBinary fromBinary =
        (CreateWithBinary)real("clCreateProgramWithBinary");
    cl_int status = 0, err = 0;
    const unsigned char *bins[] = {binary};
    cl_program program =
        fromBinary(context, 1, &device, &size, bins, &status, &err);
    free(binary);
    if (program && err == kSuccess && status == kSuccess) {
      remember(program, path, options);
      say("loaded", path);
      if (error)
        *error = kSuccess;
      return program;
    }
    free(options);
  }
  cl_program program = create(context, count, strings, lengths, error);
  if (program)
    remember(program, path, NULL);
  return program;
}

static void store(cl_program program, const char *path, const char *options) {
  GetProgramInfo info = (GetProgramInfo)real("clGetProgramInfo");
  size_t size = 0;
  if (!info ||
      info(program, kProgramBinarySizes, sizeof size, &size, NULL) !=
          kSuccess ||
      size == 0)
    return;
  unsigned char *binary = malloc(size);
  unsigned char *bins[] = {binary};
  if (!binary ||
      info(program, kProgramBinaries, sizeof bins, bins, NULL) != kSuccess) {
    free(binary);
    return;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (f) {
    int ok = fprintf(f, "%s\n", options ? options : "") >= 0 &&
             fwrite(binary, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0)
      unlink(tmp);
    else
      say("stored", path);
  }
  free(binary);
}

cl_int clBuildProgram(cl_program program, cl_uint count,
                      const cl_device_id *devices, const char *options,
                      void (*notify)(cl_program, void *), void *data) {
  Build build = (Build)real("clBuildProgram");
  struct Entry *e;
  pthread_mutex_lock(&lock);
  for (e = entries; e && e->program != program; e = e->next)
    ;
  pthread_mutex_unlock(&lock);
  if (e && e->options &&
      strcmp(e->options, options ? options : "") != 0) {
    fprintf(stderr,
            "cl_program_cache: %s was built with options '%s', not '%s'\n",
            e->path, e->options, options ? options : "");
    return kBuildProgramFailure;
  }
  cl_int status = build(program, count, devices, options, notify, data);
  if (e && !e->options && status == kSuccess)
    store(program, e->path, options);
  return status;
}
