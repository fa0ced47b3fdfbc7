/* The C API from C (compiled as C99, linked against libtilepick_c.so only): problems, operand
 * specs, errors, offline plans. argv[1] is the tilepick CLI: the offline plan's kernel must be the
 * top-1 of `tilepick select` for the same problem and arch. No GPU needed. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilepick/tilepick.h"

static int failures = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

#define CHECK_STATUS(call, want)                                                                  \
  do {                                                                                            \
    tp_status got_ = (call);                                                                      \
    if (got_ != (want)) {                                                                         \
      fprintf(stderr, "%s:%d: %s returned %s, want %s (last error: %s)\n", __FILE__, __LINE__,    \
              #call, tp_status_name(got_), tp_status_name(want), tp_last_error());                \
      ++failures;                                                                                 \
    }                                                                                             \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, tp_status_ok)

static int contains(const char* text, const char* part) { return text && strstr(text, part) != NULL; }

static void expect_error(const char* part) {
  if (!contains(tp_last_error(), part)) {
    fprintf(stderr, "last error '%s' does not contain '%s'\n", tp_last_error(), part);
    ++failures;
  }
}

static const char* kGemm = "gemm rcr m128 n256 k64 bf16";
static const char* kConv = "fwd g1 mb2 ic8 ih8 iw8 oc16 kh3 kw3 sh1 sw1 ph1 pw1 f16 ep=bias+relu";

static void test_library(void) {
  CHECK(strlen(tp_version()) > 0);
  CHECK(strcmp(tp_status_name(tp_status_invalid_argument), "invalid_argument") == 0);
  CHECK(strcmp(tp_status_name((tp_status)42), "unknown") == 0);
  CHECK(strcmp(tp_dtype_name(tp_dtype_bf16), "bf16") == 0);
  CHECK(tp_dtype_name((tp_dtype)9) == NULL);
  CHECK(tp_last_error() != NULL);
}

static void test_problems(void) {
  tp_problem* p = NULL;
  tp_problem* again = NULL;
  const char* text = NULL;
  const char* text2 = NULL;
  const char* op = NULL;
  size_t n = 0;
  tp_operand_spec s;

  CHECK_OK(tp_problem_parse(kGemm, &p));
  CHECK(strcmp(tp_last_error(), "") == 0);
  CHECK_OK(tp_problem_string(p, &text));
  CHECK(contains(text, "gemm rcr") && contains(text, "m128") && contains(text, "bf16"));
  CHECK_OK(tp_problem_parse(text, &again)); /* the canonical string round-trips */
  CHECK_OK(tp_problem_string(again, &text2));
  CHECK(strcmp(text, text2) == 0);
  CHECK_OK(tp_problem_op(p, &op));
  CHECK(strcmp(op, "gemm") == 0);

  CHECK_OK(tp_problem_operand_count(p, &n));
  CHECK(n == 3); /* A, B, D (beta = 0, no bias) */
  CHECK_OK(tp_problem_operand(p, 0, &s));
  CHECK(strcmp(s.name, "A") == 0 && strcmp(s.slot, "a") == 0 && strcmp(s.dims, "MK") == 0);
  CHECK(s.dtype == tp_dtype_bf16 && s.ndim == 2 && s.shape[0] == 128 && s.shape[1] == 64 && !s.output);
  CHECK_OK(tp_problem_operand(p, 1, &s)); /* B is column-major: memory [N][K] */
  CHECK(strcmp(s.name, "B") == 0 && strcmp(s.dims, "NK") == 0 && s.shape[0] == 256 && s.shape[1] == 64);
  CHECK_OK(tp_problem_operand(p, 2, &s));
  CHECK(strcmp(s.name, "D") == 0 && strcmp(s.slot, "d") == 0 && s.output && s.shape[0] == 128 && s.shape[1] == 256);
  CHECK_STATUS(tp_problem_operand(p, 3, &s), tp_status_invalid_argument);
  expect_error("index 3 is out of range");
  tp_problem_destroy(again);
  tp_problem_destroy(p);

  CHECK_OK(tp_problem_parse(kConv, &p));
  CHECK_OK(tp_problem_op(p, &op));
  CHECK(strcmp(op, "conv_fwd") == 0);
  CHECK_OK(tp_problem_operand_count(p, &n));
  CHECK(n == 4); /* x, w, y, bias */
  CHECK_OK(tp_problem_operand(p, 0, &s));
  CHECK(strcmp(s.name, "x") == 0 && strcmp(s.dims, "NHWC") == 0 && s.ndim == 4);
  CHECK(s.shape[0] == 2 && s.shape[1] == 8 && s.shape[2] == 8 && s.shape[3] == 8 && s.dtype == tp_dtype_f16);
  CHECK_OK(tp_problem_operand(p, 1, &s));
  CHECK(strcmp(s.name, "w") == 0 && strcmp(s.dims, "KYXC") == 0 && s.shape[0] == 16 && s.shape[3] == 8);
  CHECK_OK(tp_problem_operand(p, 3, &s));
  CHECK(strcmp(s.name, "bias") == 0 && strcmp(s.slot, "bias") == 0 && s.ndim == 1 && s.shape[0] == 16);
  tp_problem_destroy(p);
}

static void test_errors(void) {
  tp_problem* p = (tp_problem*)&failures; /* must be reset to NULL on failure */
  tp_plan* plan = NULL;
  tp_plan_options o;
  tp_applicability a;
  size_t n = 0;

  CHECK_STATUS(tp_problem_parse("gemm rcr m12x n4 k4 f16", &p), tp_status_parse_error);
  CHECK(p == NULL);
  expect_error("tp_problem_parse: ");
  expect_error("m12x");
  CHECK_STATUS(tp_problem_parse("fwd g3 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f16", &p), tp_status_invalid_problem);
  CHECK_STATUS(tp_problem_parse(NULL, &p), tp_status_invalid_argument);
  expect_error("tp_problem_parse: argument 'text' is NULL");
  CHECK_STATUS(tp_problem_parse(kGemm, NULL), tp_status_invalid_argument);
  expect_error("argument 'out' is NULL");
  CHECK_STATUS(tp_problem_operand_count(NULL, &n), tp_status_invalid_argument);
  expect_error("tp_problem_operand_count: argument 'problem' is NULL");
  CHECK_STATUS(tp_plan_options_init(NULL), tp_status_invalid_argument);
  CHECK_STATUS(tp_plan_kernel(NULL, NULL), tp_status_invalid_argument);
  expect_error("'plan'");
  CHECK_STATUS(tp_plan_run(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), tp_status_invalid_argument);
  CHECK_STATUS(tp_plan_create(NULL, NULL, &plan), tp_status_invalid_argument);
  CHECK(plan == NULL);
  CHECK_STATUS(tp_dispatcher_plan(NULL, NULL, NULL, &plan), tp_status_invalid_argument);
  expect_error("tp_dispatcher_plan: argument 'dispatcher' is NULL");
  tp_problem_destroy(NULL);
  tp_plan_destroy(NULL);
  tp_dispatcher_destroy(NULL);

  CHECK_OK(tp_problem_parse(kGemm, &p));
  CHECK_OK(tp_plan_options_init(&o));
  o.offline_arch = "h200";
  o.strategy = (tp_strategy)42;
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  expect_error("options.strategy 42 is not a tp_strategy");
  CHECK_STATUS(tp_check(p, &o, &a), tp_status_invalid_argument);
  o.strategy = tp_strategy_heuristic;
  o.vendor = (tp_vendor_mode)7;
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  expect_error("options.vendor 7");
  o.vendor = tp_vendor_default;
  o.strategy = tp_strategy_top_k; /* times kernels: refused offline */
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  expect_error("cannot plan offline");
  o.strategy = tp_strategy_race; /* times kernels too */
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  expect_error("strategy race times kernels");
  o.strategy = tp_strategy_fixed; /* without a config */
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  o.strategy = tp_strategy_auto;
  o.auto_time_us = NAN;
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_invalid_argument);
  expect_error("options.auto_time_us is NaN");
  o.auto_time_us = -1;
  o.strategy = tp_strategy_heuristic;
  o.offline_arch = "no_such_gpu";
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_not_found);
  expect_error("no_such_gpu");
  CHECK(plan == NULL);
  tp_problem_destroy(p);

  /* Valid, but no kernel can run it offline: fp8 GEMM on an Ampere arch, vendor off. */
  CHECK_OK(tp_problem_parse("gemm rcr m256 n256 k256 e4m3:e4m3:bf16", &p));
  CHECK_OK(tp_plan_options_init(&o));
  o.offline_arch = "a100_sxm";
  o.vendor = tp_vendor_off;
  CHECK_OK(tp_check(p, &o, &a));
  CHECK(a.ok == 0 && a.tilepick_candidates == 0);
  CHECK(contains(a.reason, "no legal tilepick kernel"));
  CHECK_STATUS(tp_plan_create(p, &o, &plan), tp_status_unsupported);
  expect_error("no legal tilepick kernel");
  tp_problem_destroy(p);
}

/* Top-1 config of `tilepick select -p P --arch A -k 1`: the last field after the score. */
static int select_top1(const char* cli, const char* problem, const char* arch, char* out, size_t size) {
  char cmd[1024], line[2048];
  FILE* f;
  int found = 0;
  snprintf(cmd, sizeof cmd, "'%s' select -p '%s' --arch %s -k 1", cli, problem, arch);
  f = popen(cmd, "r");
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    char* cfg = strstr(line, "fam=");
    if (line[0] == '1' && cfg && !found) {
      cfg[strcspn(cfg, "\n")] = '\0';
      snprintf(out, size, "%s", cfg);
      found = 1;
    }
  }
  return pclose(f) == 0 && found;
}

static void test_offline_plan(const char* cli) {
  const char* problems[2];
  int i;
  problems[0] = kGemm;
  problems[1] = kConv;
  for (i = 0; i < 2; ++i) {
    tp_problem* p = NULL;
    tp_plan* plan = NULL;
    tp_plan_options o;
    tp_applicability a;
    const char *kernel = NULL, *json = NULL, *text = NULL;
    char want[1024] = "";
    size_t ws = 123, align = 0;
    int runnable = 1;
    tp_tensor t[4];

    CHECK_OK(tp_problem_parse(problems[i], &p));
    CHECK_OK(tp_problem_string(p, &text));
    CHECK_OK(tp_plan_options_init(&o));
    CHECK(o.strategy == tp_strategy_auto && o.k == 4 && o.device == -1 && o.vendor == tp_vendor_default &&
          o.auto_time_us < 0);
    o.offline_arch = "h200";
    CHECK_OK(tp_check(p, &o, &a));
    CHECK(a.ok == 1 && a.tilepick_candidates > 0 && strcmp(a.reason, "") == 0);
    CHECK_OK(tp_plan_create(p, &o, &plan));
    if (!plan) continue;
    CHECK_OK(tp_plan_kernel(plan, &kernel));
    CHECK(select_top1(cli, text, "h200", want, sizeof want));
    if (strcmp(kernel, want) != 0) {
      fprintf(stderr, "offline plan kernel '%s' != tilepick select top-1 '%s' for '%s'\n", kernel, want, text);
      ++failures;
    }
    CHECK_OK(tp_plan_runnable(plan, &runnable));
    CHECK(runnable == 0);
    CHECK_OK(tp_plan_workspace_bytes(plan, &ws));
    CHECK(ws != 123);
    CHECK_OK(tp_plan_alignment(plan, "a", &align));
    CHECK(align >= 2);
    CHECK_STATUS(tp_plan_alignment(plan, "e", &align), tp_status_invalid_argument);
    expect_error("unknown operand slot 'e'");
    CHECK_OK(tp_plan_info_json(plan, &json));
    CHECK(contains(json, "\"arch\":\"h200\"") && contains(json, "\"device\":-1") && contains(json, kernel));

    /* Offline plans select only: running is refused with the reason. */
    CHECK_STATUS(tp_plan_run(plan, NULL, NULL, NULL, NULL, NULL, NULL, NULL), tp_status_unsupported);
    expect_error("tp_plan_run: ");
    expect_error("was made offline for arch h200");
    memset(t, 0, sizeof t);
    CHECK_STATUS(tp_plan_run_tensors(plan, t, i == 0 ? 3 : 4, NULL, NULL), tp_status_unsupported);
    expect_error("made offline");
    CHECK_STATUS(tp_plan_run_tensors(plan, t, 1, NULL, NULL), tp_status_invalid_argument);
    expect_error(i == 0 ? "takes 3 tensors (A, B, D), got 1" : "takes 4 tensors (x, w, y, bias), got 1");
    CHECK_STATUS(tp_plan_run_tensors(plan, NULL, 2, NULL, NULL), tp_status_invalid_argument);
    expect_error("argument 'tensors' is NULL");
    CHECK_STATUS(tp_plan_run_tensors(plan, t, SIZE_MAX, NULL, NULL), tp_status_invalid_argument);
    expect_error("exceeds the 16 tensors");
    t[0].ndim = 2; /* shape NULL */
    CHECK_STATUS(tp_plan_run_tensors(plan, t, 3, NULL, NULL), tp_status_invalid_argument);
    expect_error("tensors[0].shape is NULL");
    t[0].ndim = 0;
    t[1].ndim = 9;
    CHECK_STATUS(tp_plan_run_tensors(plan, t, 3, NULL, NULL), tp_status_invalid_argument);
    expect_error("tensors[1].ndim 9 is outside 0..8");
    t[1].ndim = 0;
    t[2].dtype = (tp_dtype)11;
    CHECK_STATUS(tp_plan_run_tensors(plan, t, 3, NULL, NULL), tp_status_invalid_argument);
    expect_error("tensors[2].dtype 11 is not a tp_dtype");
    tp_plan_destroy(plan);
    tp_problem_destroy(p);
  }
}

static void test_dispatcher(const char* dir) {
  char path[1024];
  tp_dispatcher* d = NULL;
  tp_problem* p = NULL;
  tp_plan *p1 = NULL, *p2 = NULL;
  tp_plan_options o;
  tp_cache_stats s;
  const char *k1 = NULL, *k2 = NULL;
  FILE* f;
  snprintf(path, sizeof path, "%s/capi_plan_cache.json", dir);
  remove(path);
  CHECK_OK(tp_dispatcher_create(path, &d));
  CHECK_OK(tp_problem_parse(kGemm, &p));
  CHECK_OK(tp_plan_options_init(&o));
  o.offline_arch = "h200";
  CHECK_OK(tp_dispatcher_plan(d, p, &o, &p1));
  CHECK_OK(tp_dispatcher_plan(d, p, &o, &p2));
  CHECK_OK(tp_dispatcher_stats(d, &s));
  CHECK(s.new_plans == 1 && s.memory_hits == 1);
  CHECK_OK(tp_dispatcher_save(d));
  CHECK_OK(tp_dispatcher_clear_memory(d));
  tp_dispatcher_destroy(d); /* plans outlive their dispatcher */
  CHECK_OK(tp_plan_kernel(p1, &k1));
  CHECK_OK(tp_plan_kernel(p2, &k2));
  CHECK(k1 && k2 && strcmp(k1, k2) == 0);
  f = fopen(path, "r"); /* offline plans are persisted too */
  CHECK(f != NULL);
  if (f) fclose(f);
  tp_plan_destroy(p1);
  tp_plan_destroy(p2);
  tp_problem_destroy(p);
  CHECK_STATUS(tp_dispatcher_save(NULL), tp_status_invalid_argument);
  CHECK_OK(tp_dispatcher_stats(NULL, &s)); /* NULL: the default dispatcher */
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s TILEPICK_CLI TMP_DIR\n", argv[0]);
    return 2;
  }
  test_library();
  test_problems();
  test_errors();
  test_offline_plan(argv[1]);
  test_dispatcher(argv[2]);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_capi: all checks passed\n");
  return 0;
}
